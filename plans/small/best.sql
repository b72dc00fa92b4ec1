-- Session 28 (issue 18): per small-graph problem, the session-27 configuration (tuned on synth:mag) and the
-- three-stage search's combined configuration, each measured twice in the newest call that measured them (30
-- repeats; the call is its commit label), their ratio, the best of the whole store and its span over the gather
-- floor. Usage:
--   sqlite3 -header -column results/h200/session28.db < plans/small/best.sql
.read plans/layer.sql
with stage as (
  select m.id, v.model, v.task, d.name as dataset, m.median_ms, m.status, r.command_line, m.git_commit,
         case when r.command_line like '%-ref.space%' then 'ref'
              when r.command_line like '%-final.space%' or r.command_line like '%-refinal.space%' then 'final'
              when r.command_line like '%-edges.space%' then 'edges'
              else 'stage' end as kind
  from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id
       join runs r on r.id = m.run_id),
latest as (   -- the call (its commit label) of each problem's newest searched measurement
  select model, task, dataset, (select s2.git_commit from stage s2 where s2.model = s.model and s2.task = s.task
                                and s2.dataset = s.dataset and s2.kind = 'final' order by s2.id desc limit 1) as call
  from stage s group by model, task, dataset),
pair as (
  select s.model, s.task, s.dataset, l.call,
         avg(case when s.kind = 'ref' and s.status = 'ok' and s.git_commit = l.call then s.median_ms end) as ref_ms,
         avg(case when s.kind = 'final' and s.status = 'ok' and s.git_commit = l.call then s.median_ms end) as final_ms,
         min(case when s.status = 'ok' then s.median_ms end) as best_ms,
         count(*) as rows
  from stage s join latest l using (model, task, dataset) group by s.model, s.task, s.dataset)
select p.model, p.task, p.dataset, p.rows, substr(p.call, 1, 7) as "call",
       case when p.ref_ms is not null then printf('%.4f', p.ref_ms) else 'invalid' end as "session-27 config ms", printf('%.4f', p.final_ms) as "searched ms",
       case when p.ref_ms is not null then printf('%.2f', p.ref_ms / p.final_ms) end as "speed-up",
       printf('%.4f', p.best_ms) as "best ms",
       (select printf('%.1f', l.span_ms / l.gather_floor_ms) from stage s join layer l on l.measurement_id = s.id
        where s.model = p.model and s.task = p.task and s.dataset = p.dataset and s.status = 'ok'
        order by s.median_ms limit 1) as "best span / gather floor"
from pair p order by p.model, p.task, p.dataset;
