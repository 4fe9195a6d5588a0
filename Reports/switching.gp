# Mean switch time (failed switches as timeouts) against cached apps kept: mean over seeds with 95% intervals
# Drawn by the benchmark harness; redraw with: gnuplot switching.gp
set terminal svg size 980,560 dynamic noenhanced font 'sans,11' background rgb 'white'
set output 'switching.svg'
set title "Mean switch time (failed switches as timeouts) against cached apps kept: mean over seeds with 95% intervals"
set grid back lc rgb '#dddddd'
set key noautotitle
set border lc rgb '#555555'
$p0 << EOD
# cached apps	mean ms	x low	x high	y low	y high	configuration
3.642257861692083	95.8431100058259	3.5687704280492767	3.709424163043436	78.80023329745384	114.48237292093475	0
4.044759285314177	101.5935626753573	3.8463799828278837	4.255850299806324	75.43787690262553	132.01814780331375	1
EOD
$p1 << EOD
# cached apps	mean ms	x low	x high	y low	y high	configuration
2.5909447009369146	77.6545439357303	2.493195242044077	2.6989394801579847	64.83650083354367	91.0191683735845	0
2.5008924073990895	95.96248987020554	2.4020227484200114	2.6045937624286024	76.19742634051227	118.99294427536047	1
EOD
$p2 << EOD
# cached apps	mean ms	x low	x high	y low	y high	configuration
3.635129255189566	91.6566250946352	3.557955458255152	3.7145993952579865	74.36675552290029	110.99635741817326	0
4.033370160154757	101.01776490384036	3.7930986583183994	4.299001726776922	82.25809230093536	120.08327422882871	1
EOD
$p3 << EOD
# cached apps	mean ms	x low	x high	y low	y high	configuration
3.8838536207548566	88.64466584916559	3.7908855288865673	3.962419631357554	73.66254010050399	107.40813555716754	0
5.185868987716734	94.48474517506546	4.926546259397698	5.435567848622119	79.88544918355065	112.85023381960994	1
EOD
$p4 << EOD
# cached apps	mean ms	x low	x high	y low	y high	configuration
4.6132423919360415	204.42101473907817	4.479949075843411	4.740118519826352	128.3859318137456	293.5774616898867	0
9.95596006777961	69.81708253048104	9.94541764981941	9.96536824023807	57.178319450167365	85.92724509912725	1
EOD
$p5 << EOD
# cached apps	mean ms	x low	x high	y low	y high	configuration
4.5640359668284995	336.37116295125213	4.4580072640437045	4.663319731640366	256.5528827648245	420.3971947345888	0
9.955071799068529	70.26124459034929	9.944132905379886	9.964276115302987	58.73378515002287	84.90334442517019	1
EOD
$p6 << EOD
# cached apps	mean ms	x low	x high	y low	y high	configuration
3.657201604683366	91.39201841639807	3.5812369839655824	3.73392740603936	76.42189524129834	109.33044265870585	0
9.86747288825416	60.974740466791104	9.84825959741274	9.886027036533841	50.3370155199378	74.61795960594128	1
EOD
$p7 << EOD
# cached apps	mean ms	x low	x high	y low	y high	configuration
4.068512806886913	113.57782298634065	4.001849411505463	4.132735563816089	100.61252759179096	126.8516320430557	0
4.721546794851722	101.57735840592517	4.445512095067671	5.01557163940139	83.17500808085443	126.2653338836797	1
EOD
$p8 << EOD
# cached apps	mean ms	x low	x high	y low	y high	configuration
4.051403494356506	101.76232920664438	3.9426012797110253	4.1396031000335265	88.06424580006055	117.12684125443823	0
9.858754326715397	55.037667784375095	9.842111949239397	9.872379948379617	46.7014128845645	66.01849461225318	1
EOD
set key outside right top vertical
set xlabel 'cached apps kept (time-weighted mean number of apps alive in the background)'
set ylabel 'mean switch time (ms)'
set yrange [0:*]
# configuration 0: no swap, room for 4 apps
# configuration 1: zram swap (lz4), room for 4 apps
plot $p0 using 1:2:3:4:5:6 with xyerrorbars pt 7 ps 1 lw 1.5 lc rgb '#d04a4a' title "jetsam ios", \
     $p1 using 1:2:3:4:5:6 with xyerrorbars pt 7 ps 1 lw 1.5 lc rgb '#4a7bd0' title "jetsam lmkd", \
     $p2 using 1:2:3:4:5:6 with xyerrorbars pt 7 ps 1 lw 1.5 lc rgb '#3a9a4a' title "jetsam ios, kernel's killer held", \
     $p3 using 1:2:3:4:5:6 with xyerrorbars pt 7 ps 1 lw 1.5 lc rgb '#9a6a2a' title "lmkd emulation", \
     $p4 using 1:2:3:4:5:6 with xyerrorbars pt 7 ps 1 lw 1.5 lc rgb '#8a4ab0' title "kernel (oom_score_adj by state)", \
     $p5 using 1:2:3:4:5:6 with xyerrorbars pt 7 ps 1 lw 1.5 lc rgb '#2a9a9a' title "kernel, blind (every app at adj 0)", \
     $p6 using 1:2:3:4:5:6 with xyerrorbars pt 7 ps 1 lw 1.5 lc rgb '#555555' title "jetsam ios, freeze-dry first", \
     $p7 using 1:2:3:4:5:6 with xyerrorbars pt 7 ps 1 lw 1.5 lc rgb '#b0a030' title "jetsam ios, lean (to 5% free)", \
     $p8 using 1:2:3:4:5:6 with xyerrorbars pt 7 ps 1 lw 1.5 lc rgb '#e07cc0' title "jetsam ios, freeze-dry first, lean (to 5% free)"
