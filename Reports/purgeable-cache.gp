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
13	"NSCache (Foundation), 1 thread"	0.9202722995242903	1	"0.92"
12	"NSCache (Foundation), 2 threads"	0.6713689959857485	1	"0.67"
11	"Dictionary, one Mutex (get/set only), 1 thread"	23.099798986183384	0	"23.10"
10	"Dictionary, one Mutex (get/set only), 2 threads"	11.477440797416435	0	"11.48"
9	"Dictionary + LRU list, one lock, 1 thread"	4.242617798327225	0	"4.24"
8	"Dictionary + LRU list, one lock, 2 threads"	3.1784887206615227	0	"3.18"
7	"PurgeableCache (LRU), 1 thread"	7.321691979606051	0	"7.32"
6	"PurgeableCache (LRU), 2 threads"	19.781263534496027	0	"19.78"
5	"PurgeableCache (SIEVE), 1 thread"	13.023767070993586	0	"13.02"
4	"PurgeableCache (SIEVE), 2 threads"	30.771517328069606	0	"30.77"
3	"PurgeableCache (S3-FIFO), 1 thread"	11.002467853918786	0	"11.00"
2	"PurgeableCache (S3-FIFO), 2 threads"	25.616069679884202	0	"25.62"
1	"PurgeableCache (W-TinyLFU), 1 thread"	4.324292759236671	0	"4.32"
0	"PurgeableCache (W-TinyLFU), 2 threads"	12.317920199041955	0	"12.32"
EOD
set style fill solid 0.9 noborder
set xrange [0:36.31039044712213]
set yrange [-0.6:13.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 50
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
