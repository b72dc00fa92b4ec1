# Figure 5: peak memory of compact (C) vs unoptimized (U) code. Left: C/U memory (%) against
# the entity compaction ratio, one point per problem x dataset; right: U and C peak memory
# of one problem per dataset (log scale), OOM labelled.
# Table: panel,x,value,base,halfwidth,series,label,xtic (panel 0: x = entity ratio %, value = C/U %;
#        panel 1: bars in MB; panel 2: dataset names where report.c found room for them;
#        panel 3: leader lines from a point (x, value) by (base, halfwidth) to a name moved away)
# Variables: datafile, outfile, nseries, series, barstitle, xticsdef, nclusters.
load 'common.gp'
# stats first: it honours the ranges set later
stats datafile skip 1 using ($1==1 ? $3 : NaN) nooutput
floor = STATS_min / 3
ceiling = STATS_max * 3
set multiplot layout 1,2 title "Peak memory: compact materialization (C) vs unoptimized (U)" font ",12"

set title "Memory ratio against entity compaction ratio"
set xlabel "entity compaction ratio (%)"
set ylabel "peak memory of C / U (%)"
set xrange [0:100]
set yrange [0:110]
set grid xtics ytics
set key bottom right
plot for [s=0:nseries-1] datafile skip 1 using ($1==0 && $6==s ? $2 : NaN):3 with points ps 1.4 lc s+1 pt s+5 \
        title word(series, s+1), \
     datafile skip 1 using ($1==3 ? $2 : NaN):3:4:5 with vectors nohead lc rgb "#999999" lw 1 notitle, \
     datafile skip 1 using ($1==2 ? $2 : NaN):3:7 with labels font ",9" notitle, \
     x with lines dt 2 lc rgb "#777777" title "ratio = entity compaction ratio"

set title "Peak memory, ".barstitle
set rmargin 9   # room for the last rotated dataset name
unset xlabel
set grid noxtics ytics
eval "set xtics ".xticsdef
if (nclusters > 6) { set xtics rotate by -30 left }
set xrange [-0.6:nclusters-0.4]
set logscale y
set yrange [floor:ceiling]
set ylabel "peak memory (MB, log scale)"
set key top left
plot datafile skip 1 using ($1==1 && $6==0 ? $2 : NaN):3:($2-$5):($2+$5):(floor):3 with boxxyerror lc 1 title "U", \
     datafile skip 1 using ($1==1 && $6==1 ? $2 : NaN):3:($2-$5):($2+$5):(floor):3 with boxxyerror lc 2 title "C", \
     datafile skip 1 using ($1==1 && strlen(strcol(7)) > 0 ? $2 : NaN):(floor):7 \
        with labels rotate by 90 left offset 0,0.3 tc rgb failcolor notitle
unset multiplot
