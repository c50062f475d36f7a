{% macro kmeans_draws(seed, count) %}
{#- The random draws of numpy's `np.random.default_rng(seed)` that a seeded
    k-means++ start of `count` clusters takes, computed here at compile
    time so that SQL repeats the start exactly: numpy seeds its PCG64
    generator through a SeedSequence (a 32-bit hash of the seed into four
    words, then eight state words), steps the 128-bit LCG and outputs
    XSL-RR 64-bit words. Returns {'low': .., 'high': ..} (the two 32-bit
    halves of the first output: `integers(n)` uses the low one, and the
    high one only when Lemire's method rejects the low one) and 'doubles':
    for each next output, the 53-bit integer whose value / 2^53 is
    `random()` (what `choice(n, p=...)` compares its cumulative weights
    with). Jinja has no bit operators: xor and shifts are arithmetic. -#}
    {%- if seed is not number or seed < 0 or count is not number or count < 1 -%}
        {{ exceptions.raise_compiler_error("kmeans_draws: seed and count are numbers, seed from 0, count from 1") }}
    {%- endif -%}
    {%- set m32 = 2 ** 32 -%}
    {%- set m64 = 2 ** 64 -%}
    {%- set m128 = 2 ** 128 -%}
    {#- SeedSequence: the seed as 32-bit words, hashed into a pool of four -#}
    {%- set entropy = [] -%}
    {%- set ns = namespace(rest=seed, hash=1135663077) -%}
    {%- for _ in range(8) -%}
        {%- if loop.first or ns.rest > 0 -%}
            {%- do entropy.append(ns.rest % m32) -%}
            {%- set ns.rest = ns.rest // m32 -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set ns.pool = [] -%}
    {%- for i in range(4) -%}
        {%- set value = _kmeans_xor(entropy[i] if i < entropy | length else 0, ns.hash, 32) -%}
        {%- set ns.hash = (ns.hash * 2468251765) % m32 -%}
        {%- set value = (value * ns.hash) % m32 -%}
        {%- set ns.pool = ns.pool + [_kmeans_xor(value, value // 65536, 32)] -%}
    {%- endfor -%}
    {%- for source in range(4) -%}
        {%- for target in range(4) -%}
            {%- if source != target -%}
                {%- set value = _kmeans_xor(ns.pool[source], ns.hash, 32) -%}
                {%- set ns.hash = (ns.hash * 2468251765) % m32 -%}
                {%- set value = (value * ns.hash) % m32 -%}
                {%- set hashed = _kmeans_xor(value, value // 65536, 32) -%}
                {%- set mixed = (3389127133 * ns.pool[target] - 1232336661 * hashed) % m32 -%}
                {%- set ns.pool = ns.pool[:target] + [_kmeans_xor(mixed, mixed // 65536, 32)] + ns.pool[target + 1:] -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- for extra in entropy[4:] -%}
        {%- for target in range(4) -%}
            {%- set value = _kmeans_xor(extra, ns.hash, 32) -%}
            {%- set ns.hash = (ns.hash * 2468251765) % m32 -%}
            {%- set value = (value * ns.hash) % m32 -%}
            {%- set hashed = _kmeans_xor(value, value // 65536, 32) -%}
            {%- set mixed = (3389127133 * ns.pool[target] - 1232336661 * hashed) % m32 -%}
            {%- set ns.pool = ns.pool[:target] + [_kmeans_xor(mixed, mixed // 65536, 32)] + ns.pool[target + 1:] -%}
        {%- endfor -%}
    {%- endfor -%}
    {#- generate_state: eight 32-bit words, read as four 64-bit ones -#}
    {%- set words = [] -%}
    {%- set ns.hash = 2337405405 -%}
    {%- for i in range(8) -%}
        {%- set value = _kmeans_xor(ns.pool[i % 4], ns.hash, 32) -%}
        {%- set ns.hash = (ns.hash * 1492356589) % m32 -%}
        {%- set value = (value * ns.hash) % m32 -%}
        {%- do words.append(_kmeans_xor(value, value // 65536, 32)) -%}
    {%- endfor -%}
    {%- set state_seed = (words[0] + words[1] * m32) * m64 + words[2] + words[3] * m32 -%}
    {%- set increment = ((words[4] + words[5] * m32) * m64 + words[6] + words[7] * m32) * 2 % m128 + 1 -%}
    {#- PCG64: seed the LCG, then step and output XSL-RR words -#}
    {%- set multiplier = 47026247687942121848144207491837523525 -%}
    {%- set ns.state = (increment + state_seed) % m128 -%}
    {%- set ns.state = (ns.state * multiplier + increment) % m128 -%}
    {%- set outputs = [] -%}
    {%- for _ in range(count) -%}
        {%- set ns.state = (ns.state * multiplier + increment) % m128 -%}
        {%- set folded = _kmeans_xor(ns.state // m64, ns.state % m64, 64) -%}
        {%- set rotation = ns.state // (2 ** 122) -%}
        {%- do outputs.append(
            (folded // (2 ** rotation) + (folded * (2 ** (64 - rotation)))) % m64
        ) -%}
    {%- endfor -%}
    {%- set doubles = [] -%}
    {%- for output in outputs[1:] %}{% do doubles.append(output // 2048) %}{% endfor -%}
    {{ return({'low': outputs[0] % m32, 'high': outputs[0] // m32, 'doubles': doubles}) }}
{% endmacro %}

{% macro _kmeans_xor(a, b, bits) %}
    {%- set ns = namespace(a=a, b=b, place=1, result=0) -%}
    {%- for _ in range(bits) -%}
        {%- if ns.a % 2 != ns.b % 2 %}{% set ns.result = ns.result + ns.place %}{% endif -%}
        {%- set ns.a = ns.a // 2 -%}
        {%- set ns.b = ns.b // 2 -%}
        {%- set ns.place = ns.place * 2 -%}
    {%- endfor -%}
    {{ return(ns.result) }}
{% endmacro %}
