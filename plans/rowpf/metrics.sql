-- Session 27 (issue 18): the kernels of the RGAT training best after wacc=reg with CUPTI counters
-- (plans/rowpf/metrics.txt), by the same query as session 26's. Usage:
--   sqlite3 -header -column results/h200/session27-metrics.db < plans/rowpf/metrics.sql
.read plans/fwd/metrics.sql
