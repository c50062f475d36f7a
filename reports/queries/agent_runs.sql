-- The runs with agent data: an eval step, a group count or a turn advantage
-- in the agent marts (a row of fct_group_summary with only times or tokens,
-- which any trainer's train/* keys can give, does not make a run agentic).
select run_id from fct_eval_steps
union
select run_id from fct_group_summary
where basis is not null
union
select run_id from fct_turn_advantages
order by 1
