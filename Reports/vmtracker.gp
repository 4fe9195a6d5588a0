# median wall time, ms (407 processes, 71800 regions)
# Drawn by the benchmark harness; redraw with: gnuplot vmtracker.gp
set terminal svg size 900,368 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'vmtracker.svg'
set title "median wall time, ms (407 processes, 71800 regions)"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$bars << EOD
# row	label	value	highlight	text
11	"floor: read all smaps in-process (1 thread)"	364.700922999873	1	"364.7"
10	"floor: cat /proc/[0-9]*/smaps"	377.4877880000531	1	"377.5"
9	"snapshot: full smaps, parsed + classified (1 thread)"	470.5409719999807	0	"470.5"
8	"snapshot: full smaps, parsed + classified (2 threads)"	296.0232090003956	0	"296.0"
7	"snapshot: smaps_rollup only (1 thread)"	109.63898099998914	0	"109.6"
6	"command: mempressure top --full --json"	358.94971699985945	0	"358.9"
5	"command: mempressure top"	78.69500750007319	0	"78.7"
4	"per-process: pmap -XX (20000+ regions)"	524.3092359996808	0	"524.3"
3	"per-process: mempressure vm --only --regions (20000+ regions)"	313.2895710000412	0	"313.3"
2	"per-process: Snapshotter.process (20000+ regions)"	99.51361299999917	0	"99.5"
1	"per-process: read smaps only (20000+ regions)"	74.06383400029881	0	"74.1"
0	"command: smem (all processes, from smaps)"	1945.0221090000923	0	"1945.0"
EOD
set style fill solid 0.9 noborder
set xrange [0:2295.126088620109]
set yrange [-0.6:11.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 64
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
