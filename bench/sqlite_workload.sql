-- The sqlite3 workload of bench/real_programs.sh and bench/preload_ab.sh (sqlite3 :memory:
-- reads it on stdin): 200k inserts, an index, a group by, deletes and a vacuum, about
-- 1.45 million allocation calls.
create table t(a integer primary key, b text, c real);
with recursive n(i) as (select 1 union all select i+1 from n where i < 200000)
insert into t select i, printf('row-%d-%s', i, hex(randomblob(8))), i*0.5 from n;
create index tb on t(b);
select count(*), sum(length(b)), avg(c) from t group by a % 17 order by 1 limit 3;
delete from t where a % 3 = 0;
vacuum;
