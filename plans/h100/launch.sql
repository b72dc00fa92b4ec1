-- Session 30 (issue 18): each small-graph combination launched one kernel at a time (stream), as one CUDA graph in
-- plan order (graph) and as the plan's dependency DAG (dag), measured in one invocation per problem and round
-- (plans/h100/launch.txt, 30 repeats): the span (the run's time, first memset to last kernel end) and the kernel
-- sum of each, the mean of the rounds, and the spans' speed-ups over stream. Usage:
--   sqlite3 -header -column STORE < plans/h100/launch.sql     (STORE: the device script's s30.db, or its merge)
.read plans/layer.sql
with m as (
  select v.model, v.task, d.name as dataset, m.median_ms, l.span_ms,
         case when json_extract(v.config, '$.launch') is null then 'stream' else json_extract(v.config, '$.launch') end as launch
  from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id
       join layer l on l.measurement_id = m.id join runs r on r.id = m.run_id
  where m.status = 'ok' and r.command_line like '%-launch.space%'),
p as (
  select model, task, dataset, count(*) as n,
         avg(case when launch = 'stream' then span_ms end) as s_stream, avg(case when launch = 'graph' then span_ms end) as s_graph,
         avg(case when launch = 'dag' then span_ms end) as s_dag,
         avg(case when launch = 'stream' then median_ms end) as k_stream, avg(case when launch = 'dag' then median_ms end) as k_dag
  from m group by model, task, dataset)
select model, task, dataset, n,
       printf('%.4f', s_stream) as "span stream", printf('%.4f', s_graph) as "graph", printf('%.4f', s_dag) as "dag",
       printf('%.3f', s_stream / s_graph) as "graph speed-up", printf('%.3f', s_stream / s_dag) as "dag speed-up",
       printf('%.4f', k_stream) as "kernel sum stream", printf('%.4f', k_dag) as "dag"
from p order by model, task, dataset;
