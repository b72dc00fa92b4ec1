# Clustered bars in a grid of panels (figures 2, 3 and 7), from the long table
#   panel,x,value,base,halfwidth,series,label,xtic
# A bar spans base..value, so on the log axis speed-ups grow up or down from 1; a failed
# cell has no bar but its label (OOM, fail) drawn upward from the base.
# Variables: npanels, panels, nseries, series, xticsdef, nclusters, rows, cols, ylab, logy,
# figtitle, and for log axes ymin, ymax, yticsdef. One legend for all panels, under the title.
# Every column of a filtered row is NaN, not only x: autoscaling would count the others.
if (!exists("figtitle")) figtitle = ""
base = logy ? 1 : 0
# margins in pixels: the y tick labels and the y label on the left; over 6 clusters the dataset
# names are rotated and take room under each row (report.c adds it to the height) and past
# the right end of the last panel
if (!exists("gl")) gl = 95.0 / width
rotated = nclusters > 6
if (!exists("gb")) gb = (rotated ? 105.0 : 55.0) / height
if (!exists("gvs")) gvs = (rotated ? 140.0 : 85.0) / height
if (!exists("gr")) gr = rotated ? 1.0 - 75.0 / width : 0.98
if (!exists("ghs")) ghs = (rotated ? 135.0 : 80.0) / width
load 'grid.gp'
set multiplot title figtitle font ",12"
eval "set xtics ".xticsdef
if (nclusters > 6) { set xtics rotate by -30 left }
set xrange [-0.6:nclusters-0.4]
if (logy) {
    set logscale y
    set yrange [ymin:ymax]
    eval "set ytics ".yticsdef
} else {
    set yrange [0:*]
}
set ylabel ylab
unset key
do for [p=0:npanels-1] {
    eval panel(p)
    set title word(panels, p+1) font ",11"
    plot for [s=0:nseries-1] datafile skip 1 \
            using ($1==p && $6==s ? $2 : NaN):($1==p ? $3 : NaN):($2-$5):($2+$5):($1==p ? $4 : NaN):($1==p ? $3 : NaN) \
            with boxxyerror lc s+1, \
         datafile skip 1 using ($1==p && strlen(strcol(7)) > 0 ? $2 : NaN):(base):7 \
            with labels rotate by 90 left offset 0,0.3 tc rgb failcolor font ",8", \
         base with lines dt 2 lc rgb "#555555" lw 1
}
eval legend_strip
set key center center horizontal maxrows 1 reverse Left samplen 1.5 width 2
plot 2 notitle, for [s=0:nseries-1] keyentry with boxxyerror lc s+1 title word(series, s+1)
unset multiplot
