# Background footprint against resume time (p50); the relaunch lines for comparison
# Drawn by the benchmark harness; redraw with: gnuplot resume-relaunch.gp
set terminal svg size 900,520 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'resume-relaunch.svg'
set title "Background footprint against resume time (p50); the relaunch lines for comparison"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$eager_none << EOD
# footprint MiB	resume ms	trim
51.2734375	6.217673002538504	"0%"
48.22265625	11.938369501876878	"10%"
43.203125	19.005055997695308	"25%"
34.90625	31.835432499065064	"50%"
26.8359375	42.55550900415983	"75%"
21.818359375	49.991341002169065	"90%"
18.8046875	55.94426800234942	"100%"
EOD
$eager_squeeze << EOD
# footprint MiB	resume ms	trim
51.2734375	31.017766501463484	"0%"
47.9609375	33.01767550146906	"10%"
42.90625	39.65977750340244	"25%"
34.91796875	51.76994950306835	"50%"
26.91796875	60.99599150184076	"75%"
21.900390625	67.7248834981583	"90%"
18.8828125	75.6617320002988	"100%"
EOD
$eager_swap << EOD
# footprint MiB	resume ms	trim
51.236328125	185.87500549983815	"0%"
47.9296875	173.03796950000105	"10%"
42.908203125	167.34380050183972	"25%"
34.92578125	155.7389779991354	"50%"
26.91796875	141.5446310020343	"75%"
21.890625	136.05991700023878	"90%"
18.87109375	140.90389699777006	"100%"
EOD
$eager_zram << EOD
# footprint MiB	resume ms	trim
51.234375	79.57218100273167	"0%"
47.9296875	81.92499299912015	"10%"
42.91015625	84.56684550037608	"25%"
34.9296875	86.45593500114046	"50%"
26.923828125	88.06129549702746	"75%"
21.890625	90.34674099893891	"90%"
18.87109375	93.73347250220831	"100%"
EOD
$lazy_none << EOD
# footprint MiB	resume ms	trim
51.2734375	3.768277496419614	"0%"
48.22265625	8.832422499835957	"10%"
43.20703125	15.50246400074684	"25%"
34.90625	15.317908499127952	"50%"
26.83984375	14.942585999961011	"75%"
21.8203125	14.527863993862411	"90%"
18.8046875	14.745808995940024	"100%"
EOD
$lazy_squeeze << EOD
# footprint MiB	resume ms	trim
51.27734375	8.258879497589078	"0%"
47.962890625	10.973459997330792	"10%"
42.908203125	17.27485849914956	"25%"
34.8828125	17.80625649917056	"50%"
26.8515625	17.22970600167173	"75%"
21.8125	16.55747300173971	"90%"
18.80078125	17.111900000600144	"100%"
EOD
$lazy_swap << EOD
# footprint MiB	resume ms	trim
51.279296875	14.431762501772027	"0%"
47.93359375	22.22433849965455	"10%"
42.91015625	29.388823997578584	"25%"
34.88671875	29.915326504124096	"50%"
26.8515625	28.6943950013665	"75%"
21.82421875	28.816228004870936	"90%"
18.798828125	31.11954449559562	"100%"
EOD
$lazy_zram << EOD
# footprint MiB	resume ms	trim
51.279296875	7.476421997125726	"0%"
47.9296875	12.768644497555215	"10%"
42.91015625	19.251603000157047	"25%"
34.88671875	19.34072449876112	"50%"
26.8515625	18.92078699893318	"75%"
21.818359375	18.346587999985786	"90%"
18.80859375	18.777538502035895	"100%"
EOD
set key outside right top vertical
set xlabel 'background footprint (MiB): dirty + swapped, what jetsam charges'
set ylabel 'ms from the resume command'
set yrange [0:204.462506049822]
set xrange [0:*]
set arrow from graph 0, first 102.41395800039754 to graph 1, first 102.41395800039754 nohead lw 1.5 lc rgb 'black'
set label "relaunch, warm (p50 102 ms)" at graph 0.02, first 102.41395800039754 offset 0,0.7
set arrow from graph 0, first 143.68794500478543 to graph 1, first 143.68794500478543 nohead dt 2 lw 1.5 lc rgb '#555555'
set label "relaunch, cold (p50 144 ms)" at graph 0.02, first 143.68794500478543 offset 0,0.7
plot $eager_none using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#4a7bd0' title "none: eager, until fully working", \
     $eager_none using 1:2:3 with labels offset 0,0.8 font 'sans,9' notitle, \
     $eager_squeeze using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#d04a4a' title "squeeze: eager, until fully working", \
     $eager_swap using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#3a9a4a' title "swap: eager, until fully working", \
     $eager_zram using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#b07a20' title "zram: eager, until fully working", \
     $lazy_none using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#4a7bd0' title "none: lazy, until ready", \
     $lazy_squeeze using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#d04a4a' title "squeeze: lazy, until ready", \
     $lazy_swap using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#3a9a4a' title "swap: lazy, until ready", \
     $lazy_zram using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#b07a20' title "zram: lazy, until ready"
