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
13	"NSCache (Foundation), 1 thread"	0.9090296751993528	1	"0.91"
12	"NSCache (Foundation), 2 threads"	0.6506297223218044	1	"0.65"
11	"Dictionary, one Mutex (get/set only), 1 thread"	22.180267999147162	0	"22.18"
10	"Dictionary, one Mutex (get/set only), 2 threads"	9.986645258719179	0	"9.99"
9	"Dictionary + LRU list, one lock, 1 thread"	3.081314908244429	0	"3.08"
8	"Dictionary + LRU list, one lock, 2 threads"	3.2318036157616987	0	"3.23"
7	"PurgeableCache (LRU), 1 thread"	5.351730270038329	0	"5.35"
6	"PurgeableCache (LRU), 2 threads"	10.633261891647045	0	"10.63"
5	"PurgeableCache (SIEVE), 1 thread"	10.715973173910413	0	"10.72"
4	"PurgeableCache (SIEVE), 2 threads"	23.48520376982999	0	"23.49"
3	"PurgeableCache (S3-FIFO), 1 thread"	5.406127137946345	0	"5.41"
2	"PurgeableCache (S3-FIFO), 2 threads"	14.3513015790962	0	"14.35"
1	"PurgeableCache (W-TinyLFU), 1 thread"	3.829633543493199	0	"3.83"
0	"PurgeableCache (W-TinyLFU), 2 threads"	9.657347648107342	0	"9.66"
EOD
set style fill solid 0.9 noborder
set xrange [0:27.712540448399388]
set yrange [-0.6:13.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 50
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
