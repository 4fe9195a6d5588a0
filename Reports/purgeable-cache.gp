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
13	"NSCache (Foundation), 1 thread"	0.8743538007358853	1	"0.87"
12	"NSCache (Foundation), 2 threads"	0.639522459881735	1	"0.64"
11	"Dictionary, one Mutex (get/set only), 1 thread"	19.650666949616358	0	"19.65"
10	"Dictionary, one Mutex (get/set only), 2 threads"	11.070801952196659	0	"11.07"
9	"Dictionary + LRU list, one lock, 1 thread"	3.308576052780178	0	"3.31"
8	"Dictionary + LRU list, one lock, 2 threads"	2.914382384684735	0	"2.91"
7	"PurgeableCache (LRU), 1 thread"	5.468023197205579	0	"5.47"
6	"PurgeableCache (LRU), 2 threads"	11.103000739145749	0	"11.10"
5	"PurgeableCache (SIEVE), 1 thread"	7.354404162131782	0	"7.35"
4	"PurgeableCache (SIEVE), 2 threads"	18.329280912632225	0	"18.33"
3	"PurgeableCache (S3-FIFO), 1 thread"	7.7322544220043925	0	"7.73"
2	"PurgeableCache (S3-FIFO), 2 threads"	19.7199358927594	0	"19.72"
1	"PurgeableCache (W-TinyLFU), 1 thread"	3.206000627772372	0	"3.21"
0	"PurgeableCache (W-TinyLFU), 2 threads"	6.658206217197758	0	"6.66"
EOD
set style fill solid 0.9 noborder
set xrange [0:23.269524353456088]
set yrange [-0.6:13.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 50
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
