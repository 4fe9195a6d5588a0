import CMemPressureZlib

/// Why bytes could not be gzipped: the zlib call that failed and its return code.
public struct GzipError: Error, Sendable, CustomStringConvertible {
    public var call: String
    public var code: Int32

    public var description: String { "\(call) failed: zlib error \(code)" }
}

/// gzip (RFC 1952) through the system's zlib: the one place the exporter touches zlib's stream.
package enum Gzip {
    /// `bytes` gzipped in one pass (zlib's default level: what a scrape answer needs, text that
    /// shrinks to about a tenth).
    package static func compress(_ bytes: [UInt8]) throws(GzipError) -> [UInt8] {
        var stream = z_stream()
        // windowBits 15 + 16: a gzip header and trailer rather than zlib's.
        let initialized = deflateInit2_(
            &stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard initialized == Z_OK else { throw GzipError(call: "deflateInit2", code: initialized) }
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, uLong(bytes.count)))
        var out = [UInt8](repeating: 0, count: bound)
        let result = bytes.withUnsafeBufferPointer { input in
            out.withUnsafeMutableBufferPointer { output in
                // zlib does not write through next_in; its type is not const only for old compilers.
                stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
                stream.avail_in = uInt(input.count)
                stream.next_out = output.baseAddress
                stream.avail_out = uInt(output.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        // deflateBound is enough for a single Z_FINISH: anything but the end is an error.
        guard result == Z_STREAM_END else { throw GzipError(call: "deflate", code: result) }
        out.removeLast(out.count - Int(stream.total_out))
        return out
    }

    /// Whether a request with `acceptEncoding` as its Accept-Encoding header takes gzip: `gzip`
    /// (or `x-gzip`) with a quality above 0, or `*` above 0 when gzip is not named.
    package static func accepted(by acceptEncoding: String?) -> Bool {
        guard let acceptEncoding else { return false }
        var gzip: Double?
        var any: Double?
        for (coding, quality) in QualityList.parse(acceptEncoding) {
            switch coding {
            case "gzip", "x-gzip": gzip = max(gzip ?? 0, quality)
            case "*": any = max(any ?? 0, quality)
            default: continue
            }
        }
        return (gzip ?? any ?? 0) > 0
    }
}
