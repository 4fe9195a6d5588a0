# get (hit), 1 thread, millions of operations per second
# Drawn by the benchmark harness; redraw with: gnuplot purgeable-cache.gp
set terminal svg size 900,200 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'purgeable-cache.svg'
set title "get (hit), 1 thread, millions of operations per second"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$bars << EOD
# row	label	value	highlight	text
4	"NSCache (Foundation), get hit"	0.5425134546470869	1	"0.54"
3	"Dictionary + LRU list, one lock, get hit"	1.6130561461312205	0	"1.61"
2	"PurgeableCache (SIEVE), get hit"	2.432967280833113	0	"2.43"
1	"PurgeableCache (LRU), get hit"	1.5481042463415011	0	"1.55"
0	"PurgeableCache (S3-FIFO), get hit"	2.20831632184486	0	"2.21"
EOD
set style fill solid 0.9 noborder
set xrange [0:2.870901391383073]
set yrange [-0.6:4.6]
set ytics scale 0 nomirror
set xtics nomirror
set grid noytics
set lmargin 43
plot $bars using (0):1:(0):3:($1-0.35):($1+0.35):($4 > 0 ? 0x999999 : 0x4a7bd0):ytic(2) with boxxyerror lc rgb variable, \
     $bars using 3:1:5 with labels left offset 0.5,0 font 'sans,10'
