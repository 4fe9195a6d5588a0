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
52.1328125	6.185004500139257	"0%"
48.43359375	11.676420499952656	"10%"
42.810546875	20.09831700001996	"25%"
34.7109375	34.39351749989328	"50%"
26.66015625	47.10201200009578	"75%"
21.640625	57.3871244998827	"90%"
18.62890625	61.63004299992281	"100%"
EOD
$eager_squeeze << EOD
# footprint MiB	resume ms	trim
52.140625	30.125486500082843	"0%"
48.28515625	37.5123869998788	"10%"
42.76953125	42.43236699971931	"25%"
34.71875	55.101698500038765	"50%"
26.66796875	66.49504699976205	"75%"
21.6484375	78.93754499991701	"90%"
18.65234375	81.0197044997949	"100%"
EOD
$eager_swap << EOD
# footprint MiB	resume ms	trim
52.109375	29.71865999984402	"0%"
48.26953125	32.94171200013807	"10%"
42.755859375	39.05503750002026	"25%"
34.71875	48.811957499992786	"50%"
26.66796875	57.75055449998945	"75%"
21.62890625	65.44164549995912	"90%"
18.62109375	67.99712650013134	"100%"
EOD
$lazy_none << EOD
# footprint MiB	resume ms	trim
52.14453125	3.5244664998117514	"0%"
48.4453125	3.091630500193787	"10%"
42.8203125	3.1415655000728293	"25%"
34.72265625	2.7796110000508634	"50%"
26.671875	2.3252375001447945	"75%"
21.65234375	2.209960999834948	"90%"
18.640625	2.031400000078065	"100%"
EOD
$lazy_squeeze << EOD
# footprint MiB	resume ms	trim
52.14453125	5.554152000058821	"0%"
48.529296875	5.165379000118264	"10%"
42.91796875	5.101367999941431	"25%"
34.91796875	5.159034499683912	"50%"
26.91015625	5.042471000024307	"75%"
21.89453125	4.825362000019595	"90%"
18.8515625	4.469436500130541	"100%"
EOD
$lazy_swap << EOD
# footprint MiB	resume ms	trim
52.2421875	3.6576804998276202	"0%"
48.431640625	3.4325164997426327	"10%"
42.9375	3.4338320001552347	"25%"
34.91796875	3.250447999789685	"50%"
26.92578125	2.9147319999083265	"75%"
21.912109375	3.0935115000829683	"90%"
18.876953125	2.8901555001539236	"100%"
EOD
set key outside right top vertical
set xlabel 'background footprint (MiB): dirty + swapped, what jetsam charges'
set ylabel 'ms from the resume command'
set yrange [0:161.41765859997577]
set xrange [0:*]
set arrow from graph 0, first 129.17966999998498 to graph 1, first 129.17966999998498 nohead lw 1.5 lc rgb 'black'
set label "relaunch, warm (p50 129 ms)" at graph 0.02, first 129.17966999998498 offset 0,0.7
set arrow from graph 0, first 146.74332599997797 to graph 1, first 146.74332599997797 nohead dt 2 lw 1.5 lc rgb '#555555'
set label "relaunch, cold (p50 147 ms)" at graph 0.02, first 146.74332599997797 offset 0,0.7
plot $eager_none using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#4a7bd0' title "none: eager, until fully working", \
     $eager_none using 1:2:3 with labels offset 0,0.8 font 'sans,9' notitle, \
     $eager_squeeze using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#d04a4a' title "squeeze: eager, until fully working", \
     $eager_swap using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#3a9a4a' title "swap: eager, until fully working", \
     $lazy_none using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#4a7bd0' title "none: lazy, until ready", \
     $lazy_squeeze using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#d04a4a' title "squeeze: lazy, until ready", \
     $lazy_swap using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#3a9a4a' title "swap: lazy, until ready"
