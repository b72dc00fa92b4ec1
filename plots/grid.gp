# A grid of panels placed by hand (multiplot without `layout`, which would move every plot),
# so that one legend strip can span the figure under its title. Loaded by panel scripts.
# In: rows, cols, height (pixels). Then `eval panel(p)` before plotting panel p, and
# `eval legend_strip` before the legend-only plot.
if (!exists("gl")) gl = 0.07
if (!exists("gr")) gr = 0.98
if (!exists("gb")) gb = 55.0 / height
if (!exists("gt")) gt = 1.0 - 100.0 / height
if (!exists("ghs")) ghs = 0.08
if (!exists("gvs")) gvs = 85.0 / height
gpw = (gr - gl - (cols - 1) * ghs) / cols
gph = (gt - gb - (rows - 1) * gvs) / rows
gx(p) = gl + (p % cols) * (gpw + ghs)
gy(p) = gt - int(p / cols) * (gph + gvs)
panel(p) = sprintf("set lmargin at screen %g; set rmargin at screen %g; set tmargin at screen %g; set bmargin at screen %g", \
    gx(p), gx(p) + gpw, gy(p), gy(p) - gph)
# the legend strip is centred, about 165 pixels per entry (nlegend entries)
if (!exists("nlegend")) nlegend = exists("nseries") ? nseries : 4
glw = nlegend * 165.0 / width / 2
glw = glw < 0.48 ? glw : 0.48
legend_strip = sprintf("set lmargin at screen %g; set rmargin at screen %g; set tmargin at screen %g; set bmargin at screen %g; unset border; unset xtics; unset ytics; unset title; unset xlabel; unset ylabel; unset logscale; unset grid; set xrange [0:1]; set yrange [0:1]; unset arrow", \
    0.5 - glw, 0.5 + glw, 1.0 - 34.0 / height, 1.0 - 62.0 / height)
