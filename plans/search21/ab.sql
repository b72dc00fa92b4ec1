-- Session 21: session 20's bests (A) against the live searches' (B), measured alternately in one device call
-- (plans/search21/README.md); per config its median over the repeats of the call, then B / A.
WITH ab AS (
  SELECT v.model, v.task, d.name AS dataset, r.git_commit, v.config,
         CASE WHEN v.config LIKE '%"trav_3.lanes"%' OR v.config LIKE '%"nchunk":8%' THEN 'A' ELSE 'B' END AS side,
         json_extract(v.config, '$.store') AS store, m.median_ms
  FROM measurements m JOIN variants v ON v.id = m.variant_id JOIN datasets d ON d.id = m.dataset_id
  JOIN runs r ON r.id = m.run_id
  WHERE m.status = 'ok' AND r.git_commit = (SELECT git_commit FROM runs ORDER BY id DESC LIMIT 1)
)
SELECT model, task, dataset, side, coalesce(store, 'f32') AS store, count(*) AS runs,
       round(min(median_ms), 4) AS best_ms, round(max(median_ms), 4) AS worst_ms
FROM ab GROUP BY model, task, dataset, side, store ORDER BY model, task, dataset, side, store;
