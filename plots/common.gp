# Shared look of every figure, loaded by each script (GNUPLOT_LIB=plots): the terminal follows
# the output's extension (.png: pngcairo, .svg: svg), DejaVu Sans 10, Paul Tol's colour-blind-safe palette.
if (!exists("width")) width = 900
if (!exists("height")) height = 600
if (strlen(outfile) > 4 && outfile[strlen(outfile)-3:] eq ".svg") {
    set terminal svg size width,height font "DejaVu Sans,10" background rgb "white" noenhanced
} else {
    set terminal pngcairo size width,height font "DejaVu Sans,10" background rgb "white" noenhanced
}
set output outfile
set datafile separator comma
set style fill solid 0.85 border rgb "#404040"
set grid ytics lc rgb "#e4e4e4" lt 1 lw 1
set border 3
set tics nomirror out
set key noautotitle
set linetype 1 lc rgb "#4477AA" pt 7 lw 2
set linetype 2 lc rgb "#EE6677" pt 5 lw 2
set linetype 3 lc rgb "#228833" pt 9 lw 2
set linetype 4 lc rgb "#CCBB44" pt 11 lw 2
set linetype 5 lc rgb "#66CCEE" pt 13 lw 2
set linetype 6 lc rgb "#AA3377" pt 4 lw 2
set linetype 7 lc rgb "#BBBBBB" pt 6 lw 2
set linetype 8 lc rgb "#332288" pt 8 lw 2
# two more from Tol's muted scheme: the report has nine datasets
set linetype 9 lc rgb "#882255" pt 12 lw 2
set linetype 10 lc rgb "#44AA99" pt 10 lw 2
set linetype cycle 10
# text of failed cells (OOM, fail)
failcolor = "#B2182B"
