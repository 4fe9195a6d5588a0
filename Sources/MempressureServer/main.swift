import MemPressureCommands
import MemPressureExporterServer

// `mempressure` with the exporter's HTTP server: what `mempressure export` and
// `mempressure supervise --export` run in.
MempressureCommandLine.main(exporterService: { ExporterService(configuration: $0, registry: $1) })
