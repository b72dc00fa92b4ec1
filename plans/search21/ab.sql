-- Session 21: session 20's bests (A) against the live searches' (B), measured alternately in one device call
-- per group of problems (plans/search21/README.md); per config its best and worst median over the repeats.
WITH ab AS (
  SELECT v.model, v.task, d.name AS dataset,
         CASE WHEN r.command_line LIKE '%-A.space%' THEN 'A' ELSE 'B' END AS side,
         coalesce(json_extract(v.config, '$.store'), 'f32') AS store, m.median_ms, substr(r.git_commit, 1, 7) AS commit_
  FROM measurements m JOIN variants v ON v.id = m.variant_id JOIN datasets d ON d.id = m.dataset_id
  JOIN runs r ON r.id = m.run_id
  WHERE m.status = 'ok' AND r.command_line LIKE '%plans/search21/%'
)
SELECT model, task, dataset, side, store, count(*) AS runs, round(min(median_ms), 4) AS best_ms,
       round(max(median_ms), 4) AS worst_ms, commit_
FROM ab GROUP BY model, task, dataset, side, store ORDER BY model, task, dataset, side, store;
