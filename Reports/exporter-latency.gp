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
85.0	6.563825001649093	5.019145995902363	13.703482408309357
385.0	6.9732654992549215	5.1884580025216565	60.472492636690745
985.0	7.176268001785502	5.0543140023364685	49.37515125981049
EOD
$e1 << EOD
# processes	p50	min	p99
95.0	60.48705099965446	47.46694200002821	91.29367129142345
395.0	170.1870870019775	131.0110310005257	301.1453898924811
995.0	355.5616715020733	260.2237500032061	861.859108596109
EOD
$e2 << EOD
# processes	p50	min	p99
105.0	24.75207199677243	13.871559000108391	51.860214536645856
405.0	80.95981100268546	38.55952100275317	161.09657146866087
1005.0	139.22594649920939	46.37813200679375	365.19008984134445
EOD
$e3 << EOD
# processes	p50	min	p99
115.0	24.82611299637938	10.285439995641354	56.50701099635632
415.0	82.14468999722158	41.04463799740188	174.25351782592773
1015.0	170.65187050320674	48.961190004774835	323.7126767059818
EOD
set logscale y 10
set yrange [2.5095729979511816:1723.718217192218]
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
