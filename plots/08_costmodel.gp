# Figure 8: the cost model. Left: predicted against measured time of every predicted variant
# (log-log, y = x dashed); without predictions, every measured config's time over its
# problem's oracle, sorted (how much the choice matters). Right: per dataset, time of the
# cost model's pick and of the best fixed config over the oracle (geomean over problems).
# Table: panel,x,value,base,halfwidth,series,label,xtic (panel 0: points or curves,
#        panel 1: bars in percent of extra time over the oracle)
# Variables: datafile, outfile, have_pred, nseries, series, nbars, bars, xticsdef, nclusters,
#            ymin0, ymax0, yticsdef0 (panel 0's log axis).
load 'common.gp'
# stats first: it honours the ranges set later
stats datafile skip 1 using ($1==1 ? $3 : NaN) nooutput
# room above the tallest bar for its vertical label
gapmax = STATS_max > 0 ? STATS_max * 1.35 + 0.12 * STATS_max : 1
set multiplot layout 1,2 title (have_pred ? "Cost model: predictions and gap to the oracle" : \
    "No cost model fitted: measured times only") font ",12"
set grid xtics ytics
set logscale y
set yrange [ymin0:ymax0]
eval "set ytics ".yticsdef0
if (have_pred) {
    # predictions track the measured times, so the lower right (predicted far above measured) is empty
    set key bottom right font ",9" spacing 0.9 samplen 1
    set title "Predicted vs measured time"
    set logscale x
    set xrange [ymin0:ymax0]
    eval "set xtics ".yticsdef0
    set xlabel "predicted time (ms, log scale)"
    set ylabel "measured time (ms, log scale)"
    plot for [s=0:nseries-1] datafile skip 1 using ($1==0 && $6==s ? $2 : NaN):($1==0 ? $3 : NaN) with points lt s+1 ps 0.8 \
            title word(series, s+1), \
         x with lines dt 2 lc rgb "#555555" title "predicted = measured"
} else {
    set title "Every measured config against its problem's oracle"
    set xlabel "configs, fastest to slowest (%)"
    set ylabel "time / oracle time (log scale)"
    set xrange [0:100]
    set key top left font ",9"
    plot for [s=0:nseries-1] datafile skip 1 using ($1==0 && $6==s ? $2 : NaN):($1==0 ? $3 : NaN) with lines lc s+1 \
            title word(series, s+1)
}
unset logscale x
unset logscale y
set ytics auto
set format y "%g"
set title "Extra time over the oracle per dataset (geomean over problems)"
unset xlabel
set ylabel "extra time over the oracle (%)"
eval "set xtics ".xticsdef
if (nclusters > 6) { set xtics rotate by -30 left }
set xrange [-0.6:nclusters-0.4]
set yrange [0:gapmax]
set grid noxtics ytics
set rmargin 9   # room for the last rotated dataset name
set key top right
# each bar's value runs up from its top, so neighbouring labels never meet
plot for [s=0:nbars-1] datafile skip 1 \
        using ($1==1 && $6==s ? $2 : NaN):($1==1 ? $3 : NaN):($2-$5):($2+$5):($1==1 ? $4 : NaN):($1==1 ? $3 : NaN) \
        with boxxyerror lc (have_pred ? s+2 : 3) title word(bars, s+1), \
     datafile skip 1 using ($1==1 ? $2 : NaN):($1==1 ? $3 : NaN):(sprintf("+%.1f%%", $3)) with labels rotate by 90 \
        left offset 0,0.3 font ",8" notitle
unset multiplot
