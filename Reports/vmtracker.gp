# median wall time, ms (406 processes, 64801 regions)
# Drawn by the benchmark harness; redraw with: gnuplot vmtracker.gp
set terminal svg size 900,368 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'vmtracker.svg'
set title "median wall time, ms (406 processes, 64801 regions)"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$bars << EOD
# row	label	value	highlight	text
11	"floor: read all smaps in-process (1 thread)"	250.2932729985332	1	"250.3"
10	"floor: cat /proc/[0-9]*/smaps"	258.6705430003349	1	"258.7"
9	"snapshot: full smaps, parsed + classified (1 thread)"	297.7709419938037	0	"297.8"
8	"snapshot: full smaps, parsed + classified (2 threads)"	187.32933400315233	0	"187.3"
7	"snapshot: smaps_rollup only (1 thread)"	86.1160979984561	0	"86.1"
6	"command: mempressure top --full --json"	213.28933350741863	0	"213.3"
5	"command: mempressure top"	55.78950999915833	0	"55.8"
4	"per-process: pmap -XX (20000+ regions)"	296.8139739969047	0	"296.8"
3	"per-process: mempressure vm --only --regions (20000+ regions)"	162.89883699209895	0	"162.9"
2	"per-process: Snapshotter.process (20000+ regions)"	64.21532601234503	0	"64.2"
1	"per-process: read smaps only (20000+ regions)"	54.16881400742568	0	"54.2"
0	"command: smem (all processes, from smaps)"	897.1929760009516	0	"897.2"
EOD
set style fill solid 0.9 noborder
set xrange [0:1058.687711681123]
set yrange [-0.6:11.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 64
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
