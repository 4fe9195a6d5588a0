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
13	"NSCache (Foundation), 1 thread"	0.39230069187012623	1	"0.39"
12	"NSCache (Foundation), 2 threads"	0.2497295878079089	1	"0.25"
11	"Dictionary, one Mutex (get/set only), 1 thread"	2.589999839557484	0	"2.59"
10	"Dictionary, one Mutex (get/set only), 2 threads"	2.193575207302107	0	"2.19"
9	"Dictionary + LRU list, one lock, 1 thread"	1.0939435104077713	0	"1.09"
8	"Dictionary + LRU list, one lock, 2 threads"	0.9555666888726098	0	"0.96"
7	"PurgeableCache (LRU), 1 thread"	0.9183772155717737	0	"0.92"
6	"PurgeableCache (LRU), 2 threads"	1.963015646639745	0	"1.96"
5	"PurgeableCache (SIEVE), 1 thread"	1.7398564177996554	0	"1.74"
4	"PurgeableCache (SIEVE), 2 threads"	3.8574619215915718	0	"3.86"
3	"PurgeableCache (S3-FIFO), 1 thread"	1.366758009082099	0	"1.37"
2	"PurgeableCache (S3-FIFO), 2 threads"	3.3786252805280426	0	"3.38"
1	"PurgeableCache (W-TinyLFU), 1 thread"	0.7864226445692939	0	"0.79"
0	"PurgeableCache (W-TinyLFU), 2 threads"	1.673276709261024	0	"1.67"
EOD
set style fill solid 0.9 noborder
set xrange [0:4.551805067478054]
set yrange [-0.6:13.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 50
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
