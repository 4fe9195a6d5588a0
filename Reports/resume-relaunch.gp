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
50.75	7.603240999742411	"0%"
47.73046875	12.018906003504526	"10%"
42.625	19.169620998582104	"25%"
34.5390625	30.477519998385105	"50%"
26.5078125	41.940726499888115	"75%"
21.490234375	49.860605500725796	"90%"
18.4765625	54.03912049951032	"100%"
EOD
$eager_squeeze << EOD
# footprint MiB	resume ms	trim
50.76171875	41.23174599953927	"0%"
47.609375	44.80148600123357	"10%"
42.58984375	51.18018949724501	"25%"
34.55078125	61.09192049916601	"50%"
26.51171875	73.4116389976407	"75%"
21.4921875	78.06278750285855	"90%"
18.48046875	82.28262649936369	"100%"
EOD
$eager_swap << EOD
# footprint MiB	resume ms	trim
50.7421875	177.5735005030583	"0%"
47.609375	180.25269500139984	"10%"
42.5859375	175.1434555008018	"25%"
34.55078125	158.18723250049516	"50%"
26.51171875	148.18493300117552	"75%"
21.4921875	139.3262505007442	"90%"
18.48046875	134.87129600252956	"100%"
EOD
$eager_zram << EOD
# footprint MiB	resume ms	trim
50.67578125	83.24264399925596	"0%"
47.60546875	85.45113850050257	"10%"
42.5859375	87.46961699944222	"25%"
34.55078125	88.38331100196228	"50%"
26.513671875	91.4947840028617	"75%"
21.4921875	93.45074000157183	"90%"
18.48046875	94.88636999958544	"100%"
EOD
$lazy_none << EOD
# footprint MiB	resume ms	trim
50.875	4.316110502259107	"0%"
47.86328125	3.796597502514487	"10%"
42.7578125	2.8276490011194255	"25%"
34.66796875	2.6404650016047526	"50%"
26.63671875	2.252671998576261	"75%"
21.6171875	2.105059003952192	"90%"
18.60546875	2.430486500088591	"100%"
EOD
$lazy_squeeze << EOD
# footprint MiB	resume ms	trim
50.875	16.946328498306684	"0%"
47.83984375	16.2107924988959	"10%"
42.76953125	16.579415496380534	"25%"
34.78515625	16.583391501626465	"50%"
26.77734375	15.682678000302985	"75%"
21.76171875	14.853709999442799	"90%"
18.74609375	15.422812495671678	"100%"
EOD
$lazy_swap << EOD
# footprint MiB	resume ms	trim
50.87890625	12.604341500264127	"0%"
47.79296875	12.391804502840387	"10%"
42.78515625	12.124339500587666	"25%"
34.80859375	12.414519998856122	"50%"
26.80078125	11.84389700210886	"75%"
21.80078125	11.550922001333674	"90%"
18.767578125	12.10283649561461	"100%"
EOD
$lazy_zram << EOD
# footprint MiB	resume ms	trim
50.87890625	9.127435503614834	"0%"
47.78125	8.334263500728412	"10%"
42.798828125	8.376484998734668	"25%"
34.841796875	7.622038498084294	"50%"
26.79296875	7.954835498821922	"75%"
21.79296875	7.277482502104249	"90%"
18.765625	7.371976003923919	"100%"
EOD
set key outside right top vertical
set xlabel 'background footprint (MiB): dirty + swapped, what jetsam charges'
set ylabel 'ms from the resume command'
set yrange [0:200.85486520038106]
set xrange [0:*]
set arrow from graph 0, first 104.8154544987483 to graph 1, first 104.8154544987483 nohead lw 1.5 lc rgb 'black'
set label "relaunch, warm (p50 105 ms)" at graph 0.02, first 104.8154544987483 offset 0,0.7
set arrow from graph 0, first 164.58336350115133 to graph 1, first 164.58336350115133 nohead dt 2 lw 1.5 lc rgb '#555555'
set label "relaunch, cold (p50 165 ms)" at graph 0.02, first 164.58336350115133 offset 0,0.7
plot $eager_none using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#4a7bd0' title "none: eager, until fully working", \
     $eager_none using 1:2:3 with labels offset 0,0.8 font 'sans,9' notitle, \
     $eager_squeeze using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#d04a4a' title "squeeze: eager, until fully working", \
     $eager_swap using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#3a9a4a' title "swap: eager, until fully working", \
     $eager_zram using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 1 lc rgb '#b07a20' title "zram: eager, until fully working", \
     $lazy_none using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#4a7bd0' title "none: lazy, until ready", \
     $lazy_squeeze using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#d04a4a' title "squeeze: lazy, until ready", \
     $lazy_swap using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#3a9a4a' title "swap: lazy, until ready", \
     $lazy_zram using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 dt 2 lc rgb '#b07a20' title "zram: lazy, until ready"
