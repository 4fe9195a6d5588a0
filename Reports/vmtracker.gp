# median wall time, ms (406 processes, 64808 regions)
# Drawn by the benchmark harness; redraw with: gnuplot vmtracker.gp
set terminal svg size 900,368 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'vmtracker.svg'
set title "median wall time, ms (406 processes, 64808 regions)"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$bars << EOD
# row	label	value	highlight	text
11	"floor: read all smaps in-process (1 thread)"	243.2968220091425	1	"243.3"
10	"floor: cat /proc/[0-9]*/smaps"	254.42520900105592	1	"254.4"
9	"snapshot: full smaps, parsed + classified (1 thread)"	303.2747249962995	0	"303.3"
8	"snapshot: full smaps, parsed + classified (2 threads)"	187.2235860064393	0	"187.2"
7	"snapshot: smaps_rollup only (1 thread)"	84.86957800050732	0	"84.9"
6	"command: mempressure top --full --json"	211.96790400426835	0	"212.0"
5	"command: mempressure top"	54.86476000805851	0	"54.9"
4	"per-process: pmap -XX (20000+ regions)"	292.53584500111174	0	"292.5"
3	"per-process: mempressure vm --only --regions (20000+ regions)"	160.14287500001956	0	"160.1"
2	"per-process: Snapshotter.process (20000+ regions)"	63.460959994699806	0	"63.5"
1	"per-process: read smaps only (20000+ regions)"	52.798448989051394	0	"52.8"
0	"command: smem (all processes, from smaps)"	972.4283620016649	0	"972.4"
EOD
set style fill solid 0.9 noborder
set xrange [0:1147.4654671619646]
set yrange [-0.6:11.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 64
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
