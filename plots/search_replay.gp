# Search replay (explore replay --summary-out): best found / oracle against the share of the space
# measured, one curve per strategy, geomean over the replayed problems; random search's exact
# expectation dashed. Not a figure of explore report (yet): draw it by hand.
# Table: series,strategy,percent_of_space,found_over_oracle
# Variables: datafile, outfile, nseries (strategies, random's expectation last), series (their
#            names, space-separated), title (optional).
load 'common.gp'
if (!exists("title")) title = "Search strategies replayed on the store"
set title title font ",12"
set grid xtics ytics
set logscale y
set xlabel "configs measured (% of each problem's space)"
set ylabel "best found / oracle (geomean over problems, log scale)"
set key top right font ",9"
plot for [s=0:nseries-2] datafile skip 1 using ($1==s ? $3 : NaN):($1==s ? $4 : NaN) with lines lt s+1 \
        title word(series, s+1), \
     datafile skip 1 using ($1==nseries-1 ? $3 : NaN):($1==nseries-1 ? $4 : NaN) with lines lt 7 dt 2 \
        title word(series, nseries)
