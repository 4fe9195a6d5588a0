# get (hit), millions of operations per second (median)
# Drawn by the benchmark harness; redraw with: gnuplot purgeable-cache.gp
set terminal svg size 900,416 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'purgeable-cache.svg'
set title "get (hit), millions of operations per second (median)"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$bars << EOD
# row	label	value	highlight	text
13	"NSCache (Foundation), 1 thread"	0.9692151111840802	1	"0.97"
12	"NSCache (Foundation), 2 threads"	0.6968115082996965	1	"0.70"
11	"Dictionary, one Mutex (get/set only), 1 thread"	25.346271894187485	0	"25.35"
10	"Dictionary, one Mutex (get/set only), 2 threads"	11.797659800408484	0	"11.80"
9	"Dictionary + LRU list, one lock, 1 thread"	5.4040886778403605	0	"5.40"
8	"Dictionary + LRU list, one lock, 2 threads"	3.5483286603470963	0	"3.55"
7	"PurgeableCache (LRU), 1 thread"	10.112025672187178	0	"10.11"
6	"PurgeableCache (LRU), 2 threads"	20.920493341064336	0	"20.92"
5	"PurgeableCache (SIEVE), 1 thread"	15.523529966777915	0	"15.52"
4	"PurgeableCache (SIEVE), 2 threads"	31.317204765305	0	"31.32"
3	"PurgeableCache (S3-FIFO), 1 thread"	14.467239699503425	0	"14.47"
2	"PurgeableCache (S3-FIFO), 2 threads"	28.26360321160041	0	"28.26"
1	"PurgeableCache (W-TinyLFU), 1 thread"	8.358467104378871	0	"8.36"
0	"PurgeableCache (W-TinyLFU), 2 threads"	16.473339398568072	0	"16.47"
EOD
set style fill solid 0.9 noborder
set xrange [0:36.9543016230599]
set yrange [-0.6:13.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 50
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
