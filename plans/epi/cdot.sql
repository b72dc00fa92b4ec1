-- Session 20 (issue 18): RGAT training with cdot=edge (commit 35e5120, plans/epi/cdot-list.txt) against
-- cdot=table (commit 41abad1, plans/epi/list.txt: session 19's best mapping), epi off, per dataset; two
-- device calls, so the ratio is across runs:
--   sqlite3 -header -column results/h200/session20.db < plans/epi/cdot.sql
with m as (
  select d.name ds, m.median_ms ms, coalesce(json_extract(v.config, '$.cdot'), 'table') cdot,
         coalesce(json_extract(v.config, '$."trav_9_bwd.scalars"'), '-') bwd
  from measurements m join variants v on v.id=m.variant_id join datasets d on d.id=m.dataset_id
  where m.status='ok' and v.model='rgat' and v.task='train' and coalesce(json_extract(v.config, '$.epi'), 0)=0
    and (m.git_commit like '41abad1%' or m.git_commit like '35e5120%'))
select ds, round(min(case when cdot='table' then ms end),4) table_ms,
       round(min(case when cdot='edge' then ms end),4) edge_ms,
       round(min(case when cdot='edge' then ms end)/min(case when cdot='table' then ms end),3) edge_vs_table
from m group by ds order by ds;
