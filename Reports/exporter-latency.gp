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
85.0	6.265234500460792	4.764496996358503	17.910036001485445
385.0	6.534400999953505	4.944724998495076	19.593808777863238
985.0	6.399885500286473	4.836392996367067	13.537243381215381
EOD
$e1 << EOD
# processes	p50	min	p99
95.0	67.16807599877939	49.927066000236664	167.48483048162615
395.0	134.51272399834124	119.8966699957964	203.2670937823423
995.0	299.49756499627256	272.813267998572	360.82233723616815
EOD
$e2 << EOD
# processes	p50	min	p99
105.0	32.91116650143522	19.27773300121771	74.2806867426407
405.0	56.02244199690176	30.347612999321427	101.21439742055372
1005.0	99.19568899931619	72.31956400210038	141.12009727694394
EOD
$e3 << EOD
# processes	p50	min	p99
115.0	32.94125600223197	18.94937300676247	79.02182942416405
415.0	57.93537000135984	34.73406600096496	94.80509621876993
1015.0	108.08135199840763	81.43231500434922	148.6901390254934
EOD
set logscale y 10
set yrange [2.3822484981792513:721.6446744723363]
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
