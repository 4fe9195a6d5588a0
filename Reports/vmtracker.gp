# median wall time, ms (406 processes, 64784 regions)
# Drawn by the benchmark harness; redraw with: gnuplot vmtracker.gp
set terminal svg size 900,368 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'vmtracker.svg'
set title "median wall time, ms (406 processes, 64784 regions)"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$bars << EOD
# row	label	value	highlight	text
11	"floor: read all smaps in-process (1 thread)"	245.7836639987363	1	"245.8"
10	"floor: cat /proc/[0-9]*/smaps"	256.77231200097594	1	"256.8"
9	"snapshot: full smaps, parsed + classified (1 thread)"	304.09658099961234	0	"304.1"
8	"snapshot: full smaps, parsed + classified (2 threads)"	189.41612799972063	0	"189.4"
7	"snapshot: smaps_rollup only (1 thread)"	85.54548600295675	0	"85.5"
6	"command: mempressure top --full --json"	217.60509850173548	0	"217.6"
5	"command: mempressure top"	59.58129549981095	0	"59.6"
4	"per-process: pmap -XX (20000+ regions)"	293.52407999977004	0	"293.5"
3	"per-process: mempressure vm --only --regions (20000+ regions)"	167.11264600235154	0	"167.1"
2	"per-process: Snapshotter.process (20000+ regions)"	63.869529996736674	0	"63.9"
1	"per-process: read smaps only (20000+ regions)"	53.2913440001721	0	"53.3"
0	"command: smem (all processes, from smaps)"	885.2017519966466	0	"885.2"
EOD
set style fill solid 0.9 noborder
set xrange [0:1044.538067356043]
set yrange [-0.6:11.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 64
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
