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
13	"NSCache (Foundation), 1 thread"	1.6369399034908354	1	"1.64"
12	"NSCache (Foundation), 2 threads"	0.9584801283932448	1	"0.96"
11	"Dictionary, one Mutex (get/set only), 1 thread"	29.386291969547443	0	"29.39"
10	"Dictionary, one Mutex (get/set only), 2 threads"	13.54795516131976	0	"13.55"
9	"Dictionary + LRU list, one lock, 1 thread"	7.949318831824095	0	"7.95"
8	"Dictionary + LRU list, one lock, 2 threads"	4.353963357997051	0	"4.35"
7	"PurgeableCache (LRU), 1 thread"	14.012090583465849	0	"14.01"
6	"PurgeableCache (LRU), 2 threads"	22.63670942510935	0	"22.64"
5	"PurgeableCache (SIEVE), 1 thread"	22.8227840021323	0	"22.82"
4	"PurgeableCache (SIEVE), 2 threads"	36.13947699279019	0	"36.14"
3	"PurgeableCache (S3-FIFO), 1 thread"	19.282926577482076	0	"19.28"
2	"PurgeableCache (S3-FIFO), 2 threads"	32.81372041466542	0	"32.81"
1	"PurgeableCache (W-TinyLFU), 1 thread"	9.810489787729583	0	"9.81"
0	"PurgeableCache (W-TinyLFU), 2 threads"	18.68584297558667	0	"18.69"
EOD
set style fill solid 0.9 noborder
set xrange [0:42.64458285149242]
set yrange [-0.6:13.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 50
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
