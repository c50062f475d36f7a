{% macro kmeans_labels(points, n_clusters, first_position, clusters_asked, seed, iterations=100) %}
{#- SQL of the list `points` with each point's k-means cluster in its
    field `label` (from 0), step for step what numpy computes for
    `_kmeans` with np.random.default_rng(seed) (the project's former
    Python model), so both engines give numpy's clusters:
    - `points`: a list of structs (position from 1, prompt_hash, s0, s1,
      s2: the standardised features; weight, label, previous: 0);
    - `n_clusters`: SQL of the clusters to make (at most `clusters_asked`,
      at most the distinct points); `first_position`: SQL of numpy's
      integers(n) + 1, the first centre (see kmeans_draws);
    - k-means++: each next centre is the first point whose running share
      of the weights (squared distance to the nearest centre, summed in
      order) exceeds numpy's next random() (choice(n, p=...));
    - Lloyd: each point to its nearest centre (the first on ties), each
      centre to its points' mean (kept when it has none), until the labels
      stop changing and the centres moved within allclose (rtol 1e-5, atol
      1e-8), at most `iterations` times.
    Distances sum their three squares in numpy's order, means add in the
    list's order: the same bits as numpy. -#}
    {%- set draws = kmeans_draws(seed, clusters_asked) -%}
    {%- set fields = ['position', 'prompt_hash', 's0', 's1', 's2', 'weight', 'label', 'previous'] -%}
    {%- set axes = ['s0', 's1', 's2'] -%}
    {%- set centres = [] -%}
    {%- for j in range(clusters_asked) %}{% do centres.append('c' ~ j) %}{% endfor -%}

    {#- k-means++. State: chosen (centres drawn), c0.. (the centres; the
        first one stands in for those not drawn yet) and the points, whose
        weight is the squared distance to their nearest centre. -#}
    {%- set first_centre = bind(
        'first_point', list_element(points, first_position),
        struct_from({'s0': 'first_point.s0', 's1': 'first_point.s1', 's2': 'first_point.s2'})
    ) -%}
    {%- set start_points = {} -%}
    {%- for field in fields %}{% do start_points.update({field: 'p.' ~ field}) %}{% endfor -%}
    {%- do start_points.update({'weight': _kmeans_distance('p', 'first')}) -%}
    {%- set start = {'chosen': '1'} -%}
    {%- for centre in centres %}{% do start.update({centre: 'first'}) %}{% endfor -%}
    {%- do start.update({'points': list_map(points, 'p', struct_from(start_points))}) -%}
    {%- set seeding = bind('first', first_centre, struct_from(start)) -%}

    {%- if clusters_asked > 1 -%}
        {%- set draw -%}
            case drawing.chosen
            {%- for double in draws.doubles %}
                when {{ loop.index }}
                    then cast({{ double }} as double) / cast(9007199254740992 as double)
            {%- endfor %}
            end
        {%- endset -%}
        {#- the running share of the weights, and the first point where it
            exceeds the draw -#}
        {%- set share_start = {
            'share': 'p.weight / total',
            'position': 'p.position',
            'picked': 'case when p.weight / total / share_total > ' ~ draw
                ~ ' then p.position else 0 end',
        } -%}
        {%- set share_step = {
            'share': 'a.share + b.share',
            'position': 'b.position',
            'picked': 'case when a.picked > 0 then a.picked'
                ~ ' when (a.share + b.share) / share_total > ' ~ draw
                ~ ' then b.position else 0 end',
        } -%}
        {%- set picked = list_fold(
            list_map('drawing.points', 'p', struct_from(share_start)),
            'a', 'b', struct_from(share_step)
        ) ~ '.picked' -%}
        {%- set drawn_points = {} -%}
        {%- for field in fields %}{% do drawn_points.update({field: 'p.' ~ field}) %}{% endfor -%}
        {%- do drawn_points.update({
            'weight': 'least(p.weight, ' ~ _kmeans_distance('p', 'centre') ~ ')'}) -%}
        {%- set drawn = {'chosen': 'drawing.chosen + 1'} -%}
        {%- for centre in centres -%}
            {%- do drawn.update({centre: 'case when drawing.chosen = ' ~ loop.index0
                ~ ' then centre else drawing.' ~ centre ~ ' end'}) -%}
        {%- endfor -%}
        {%- do drawn.update({'points': list_map('drawing.points', 'p', struct_from(drawn_points))}) -%}
        {%- set seeding_round -%}
            case
                when drawing.chosen >= {{ n_clusters }} then drawing
                else {{ bind(
                    'total',
                    list_total(list_map('drawing.points', 'p', 'p.weight')),
                    bind(
                        'share_total',
                        list_total(list_map('drawing.points', 'p', 'p.weight / total')),
                        bind(
                            'picked_point', list_element('drawing.points', picked),
                            bind(
                                'centre',
                                struct_from({
                                    's0': 'picked_point.s0',
                                    's1': 'picked_point.s1',
                                    's2': 'picked_point.s2',
                                }),
                                struct_from(drawn)
                            )
                        )
                    )
                ) }}
            end
        {%- endset -%}
        {%- set seeding = repeat_fold(clusters_asked - 1, seeding, 'drawing', seeding_round) -%}
    {%- endif -%}

    {#- Lloyd. State: done, the centres and the points with their label
        (and the one before). -#}
    {%- set lloyd_start = {'done': 'false'} -%}
    {%- for centre in centres %}{% do lloyd_start.update({centre: 'seeded.' ~ centre}) %}{% endfor -%}
    {%- do lloyd_start.update({'points': 'seeded.points'}) -%}
    {%- set distances = {} -%}
    {%- for centre in centres -%}
        {%- do distances.update({'d' ~ loop.index0: _kmeans_distance('p', 'state.' ~ centre)}) -%}
    {%- endfor -%}
    {#- numpy's argmin: the first centre at the least distance -#}
    {%- set nearest -%}
        case
        {%- for j in range(clusters_asked) %}
            when {{ j }} < {{ n_clusters }}
            {%- for i in range(clusters_asked) if i != j %}
                and (
                    {{ i }} >= {{ n_clusters }}
                    or distances.d{{ j }} {{ '<' if i < j else '<=' }} distances.d{{ i }}
                )
            {%- endfor %}
                then {{ j }}
        {%- endfor %}
        end
    {%- endset -%}
    {%- set assigned_points = {} -%}
    {%- for field in fields %}{% do assigned_points.update({field: 'p.' ~ field}) %}{% endfor -%}
    {%- do assigned_points.update({
        'label': bind('distances', struct_from(distances), nearest),
        'previous': 'p.label',
    }) -%}
    {#- done: no label changed and every centre moved within allclose;
        then the state stays as it is (numpy's break) -#}
    {%- set moved_state = {'done': 'is_done'} -%}
    {%- for centre in centres -%}
        {%- do moved_state.update({centre: 'case when is_done then state.' ~ centre
            ~ ' else moved_' ~ centre ~ ' end'}) -%}
    {%- endfor -%}
    {%- do moved_state.update({'points': 'assigned'}) -%}
    {%- set close = [] -%}
    {%- for centre in centres -%}
        {%- for axis in axes -%}
            {%- do close.append(
                'abs(moved_' ~ centre ~ '.' ~ axis ~ ' - state.' ~ centre ~ '.' ~ axis
                ~ ') <= 1e-8 + 1e-5 * abs(state.' ~ centre ~ '.' ~ axis ~ ')') -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- set ns = namespace(body=bind(
        'is_done',
        list_size(list_where('assigned', 'p', 'p.label != p.previous')) ~ ' = 0 and '
            ~ close | join(' and '),
        struct_from(moved_state)
    )) -%}
    {#- each centre's new place: its points' mean, their coordinates summed
        in order (0 for the other points' places adds nothing) -#}
    {%- for centre in centres | reverse -%}
        {%- set j = clusters_asked - loop.index -%}
        {%- set mean = {} -%}
        {%- for axis in axes -%}
            {%- do mean.update({axis: list_total(list_map(
                'assigned', 'p', 'case when p.label = ' ~ j ~ ' then p.' ~ axis ~ ' else 0.0 end'
            )) ~ ' / cast(members as double)'}) -%}
        {%- endfor -%}
        {%- set ns.body = bind(
            'moved_' ~ centre,
            bind(
                'members',
                list_size(list_where('assigned', 'p', 'p.label = ' ~ j)),
                'case when members = 0 then state.' ~ centre ~ ' else '
                    ~ struct_from(mean) ~ ' end'
            ),
            ns.body
        ) -%}
    {%- endfor -%}
    {%- set step -%}
        case
            when state.done then state
            else {{ bind('assigned', list_map('state.points', 'p', struct_from(assigned_points)), ns.body) }}
        end
    {%- endset -%}
    {{ return(bind('seeded', seeding, repeat_fold(iterations, struct_from(lloyd_start), 'state', step)) ~ '.points') }}
{% endmacro %}

{% macro _kmeans_distance(a, b) %}
{#- The squared distance between two structs with fields s0, s1, s2,
    summed as numpy sums its last axis: ((x0 + x1) + x2). -#}
    {{ return(
        '((((' ~ a ~ '.s0 - ' ~ b ~ '.s0) * (' ~ a ~ '.s0 - ' ~ b ~ '.s0)'
        ~ ' + (' ~ a ~ '.s1 - ' ~ b ~ '.s1) * (' ~ a ~ '.s1 - ' ~ b ~ '.s1))'
        ~ ' + (' ~ a ~ '.s2 - ' ~ b ~ '.s2) * (' ~ a ~ '.s2 - ' ~ b ~ '.s2)))'
    ) }}
{% endmacro %}
