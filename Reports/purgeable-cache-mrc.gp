# LRU miss-ratio curve: exact (stack distances) and SHARDS, Zipf 1.0, 20000000 requests
# Drawn by the benchmark harness; redraw with: gnuplot purgeable-cache-mrc.gp
set terminal svg size 900,500 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'purgeable-cache-mrc.svg'
set title "LRU miss-ratio curve: exact (stack distances) and SHARDS, Zipf 1.0, 20000000 requests"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$exact << EOD
# capacity	miss ratio
10000	0.4148797
20000	0.3583628
50000	0.281566
100000	0.2218164
200000	0.16056605
EOD
$shards0 << EOD
# capacity	miss ratio
10000	0.39780537937677324
20000	0.3464403303912453
50000	0.27968526672865557
100000	0.22372021335622153
200000	0.1630501554967456
EOD
$shards1 << EOD
# capacity	miss ratio
10000	0.41608490079762916
20000	0.35830191457416666
50000	0.2810929329822223
100000	0.22184194710875818
200000	0.1606704616931768
EOD
set key top right
set xlabel 'capacity (objects)'
set ylabel 'miss ratio'
set yrange [0:1]
plot $exact using 1:2 with linespoints lw 2 pt 7 title 'exact', $shards0 using 1:2 with linespoints dt 2 title "SHARDS 0.01", $shards1 using 1:2 with linespoints dt 2 title "SHARDS 0.1"
