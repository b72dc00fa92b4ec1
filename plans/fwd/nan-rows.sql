-- Session 26: measurements recorded 'ok' whose own validation report names a NaN error. Until commit 677b7e0
-- the validator's largest error let a later finite error replace a NaN (measure/validate.c, worst_error),
-- so a training variant whose d_feature was NaN passed on its clean SGD steps. All such rows are RGAT
-- training with vec > 1, whose compact-row kernel (d_hs, _bt3) named its vector element loop u, the row's
-- own name there: the loop wrote rows 0..V-1 and left the others poisoned. This re-judges each such row
-- from its stored report (its time stays, its status becomes wrong_answer). Usage, per store:
--   sqlite3 STORE < plans/fwd/nan-rows.sql
-- It prints the rows it changed; run again, it changes none.
select count(*) as "rows re-judged" from measurements
where status = 'ok' and (evidence like '%=nan%' or evidence like '%=-nan%');
update measurements
set status = 'wrong_answer',
    evidence = 'NaN in the validation report, re-judged in session 26 (plans/fwd/nan-rows.sql); was: ' || evidence
where status = 'ok' and (evidence like '%=nan%' or evidence like '%=-nan%');
