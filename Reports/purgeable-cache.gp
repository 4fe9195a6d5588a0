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
13	"NSCache (Foundation), 1 thread"	0.960271526376213	1	"0.96"
12	"NSCache (Foundation), 2 threads"	0.6371910073675113	1	"0.64"
11	"Dictionary, one Mutex (get/set only), 1 thread"	26.086118365416382	0	"26.09"
10	"Dictionary, one Mutex (get/set only), 2 threads"	11.287773801237423	0	"11.29"
9	"Dictionary + LRU list, one lock, 1 thread"	5.18429809033535	0	"5.18"
8	"Dictionary + LRU list, one lock, 2 threads"	2.742831690622123	0	"2.74"
7	"PurgeableCache (LRU), 1 thread"	3.713193898385187	0	"3.71"
6	"PurgeableCache (LRU), 2 threads"	7.494524285070754	0	"7.49"
5	"PurgeableCache (SIEVE), 1 thread"	11.217410785677297	0	"11.22"
4	"PurgeableCache (SIEVE), 2 threads"	28.029481352553294	0	"28.03"
3	"PurgeableCache (S3-FIFO), 1 thread"	7.423755176296564	0	"7.42"
2	"PurgeableCache (S3-FIFO), 2 threads"	23.896224433003788	0	"23.90"
1	"PurgeableCache (W-TinyLFU), 1 thread"	2.415237581262212	0	"2.42"
0	"PurgeableCache (W-TinyLFU), 2 threads"	7.475544447802696	0	"7.48"
EOD
set style fill solid 0.9 noborder
set xrange [0:33.07478799601289]
set yrange [-0.6:13.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 50
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
