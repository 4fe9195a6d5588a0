# scrape latency (median; bars min to p99) by processes added
# Drawn by the benchmark harness; redraw with: gnuplot exporter-latency.gp
set terminal svg size 900,520 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'exporter-latency.svg'
set title "scrape latency (median; bars min to p99) by processes added"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$e0 << EOD
# processes	p50	min	p99
85.0	14.59793349931715	10.93427299929317	20.73730319680182
385.0	15.14746350585483	9.761053006513976	19.30302876469796
985.0	14.15361049294006	9.96325199957937	19.51106666165288
EOD
$e1 << EOD
# processes	p50	min	p99
95.0	103.46625800593756	76.00309600820765	121.18860263464741
395.0	328.1291254970711	230.41409700817894	362.72699451088556
995.0	750.0634585012449	565.085269001429	837.9938602384937
EOD
$e2 << EOD
# processes	p50	min	p99
105.0	20.291609507694375	15.553845005342737	33.02418405728532
405.0	54.331483494024724	43.167914991499856	67.940812825691
1005.0	114.94681549811503	81.80745999561623	131.68793902543263
EOD
$e3 << EOD
# processes	p50	min	p99
115.0	20.2760504980688	15.603409003233537	31.72666902144558
415.0	54.15926600107923	43.070353000075556	70.69757006902364
1015.0	117.05814900051337	84.15218599839136	133.08192548065563
EOD
set logscale y 10
set yrange [4.880526503256988:1675.9877204769873]
set xrange [40.0:1060.0]
set xtics ("100" 100, "400" 400, "1000" 1000) nomirror
set ytics nomirror
set xlabel 'processes added to the machine'
set ylabel 'milliseconds (log scale)'
set key inside top left vertical opaque box lc rgb '#cccccc'
plot $e0 using 1:2:3:4 with yerrorlines lw 2 pt 7 ps 0.8 lc rgb '#888888' title "node_exporter", \
     $e1 using 1:2:3:4 with yerrorlines lw 2 pt 7 ps 0.8 lc rgb '#d08a3a' title "process-exporter", \
     $e2 using 1:2:3:4 with yerrorlines lw 2 pt 7 ps 0.8 lc rgb '#2a5bb0' title "mempressure export", \
     $e3 using 1:2:3:4 with yerrorlines lw 2 pt 7 ps 0.8 lc rgb '#8fb3e8' title "mempressure export + alloc counter", \
     200.0 with lines dt 2 lw 1.5 lc rgb '#c03030' title '200 ms target'
