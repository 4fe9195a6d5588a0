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
13	"NSCache (Foundation), 1 thread"	1.2703999231851497	1	"1.27"
12	"NSCache (Foundation), 2 threads"	0.935958353453943	1	"0.94"
11	"Dictionary, one Mutex (get/set only), 1 thread"	27.364857291126828	0	"27.36"
10	"Dictionary, one Mutex (get/set only), 2 threads"	13.588727855677819	0	"13.59"
9	"Dictionary + LRU list, one lock, 1 thread"	6.7134694847465015	0	"6.71"
8	"Dictionary + LRU list, one lock, 2 threads"	4.218864443937938	0	"4.22"
7	"PurgeableCache (LRU), 1 thread"	12.294292210583569	0	"12.29"
6	"PurgeableCache (LRU), 2 threads"	21.718913902529472	0	"21.72"
5	"PurgeableCache (SIEVE), 1 thread"	20.419890947698832	0	"20.42"
4	"PurgeableCache (SIEVE), 2 threads"	35.22970365579355	0	"35.23"
3	"PurgeableCache (S3-FIFO), 1 thread"	18.004245256772652	0	"18.00"
2	"PurgeableCache (S3-FIFO), 2 threads"	31.854147757960607	0	"31.85"
1	"PurgeableCache (W-TinyLFU), 1 thread"	9.028544665121608	0	"9.03"
0	"PurgeableCache (W-TinyLFU), 2 threads"	16.58244415730247	0	"16.58"
EOD
set style fill solid 0.9 noborder
set xrange [0:41.57105031383639]
set yrange [-0.6:13.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 50
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
