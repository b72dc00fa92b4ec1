-- Session 27 (issue 18): every row of plans/rowpf, one per variant and dataset, in the order of the calls, with
-- the keys the calls varied, the layer's time and its largest kernels. Usage:
--   sqlite3 -header -column results/h200/session27.db < plans/rowpf/ab.sql
.read plans/layer.sql
select v.model, v.task, d.name as dataset, m.git_commit as tree,
       (select group_concat(key || '=' || value, ',') from json_each(v.config)
        where key like '%rowpf' or key like '%wacc' or key like '%occ' or key in ('vec', 'trav_3.lanes', 'trav_4.vec',
              'trav_6.lanes', 'trav_10_bwd.lanes', 'trav_10_bwd.vec', 'trav_10_bwd.acc', 'trav_12_bwd.lanes',
              'trav_12_bwd.vec')) as "varied keys",
       m.status, case when m.status = 'ok' then printf('%.4f', m.median_ms) end as ms,
       (select group_concat(kernel || ' ' || printf('%.3f', median_ns / 1e6), ', ')
        from (select kernel, median_ns from kernel_times k where k.measurement_id = m.id
              order by median_ns desc limit 3)) as "largest kernels (ms)",
       case when m.status = 'ok' then printf('%.1f', l.span_ms / l.gather_floor_ms) end as "span / gather floor"
from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id
     left join layer l on l.measurement_id = m.id
order by m.run_id, m.median_ms;
