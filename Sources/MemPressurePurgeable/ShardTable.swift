import Glibc

/// One of `PurgeableCache`'s shards: its entries in an open-addressing hash table with linear
/// probing, one control byte per bucket and the key and element of a bucket side by side.
///
/// Why not a `Dictionary`: a hit then hashes its key once, not once for the shard and again in
/// the dictionary (the caller passes the hash it chose the shard with), and it reads a control
/// byte (a shard's are a few KiB, so they stay in cache) and then one bucket, where a
/// `Dictionary` reads its occupancy bitmap, then the key in one array and the element in
/// another. With 100,000 entries that is one cache miss per hit instead of two
/// (Reports/purgeable-cache.md measures what it gives).
///
/// - Control bytes: 0 for an empty bucket, else 0x80 | 7 bits of the hash (`tag`), so most
///   buckets whose key differs are passed over without reading their key.
/// - Removal shifts the following buckets of the probe run back (no tombstones), so a lookup
///   that meets an empty bucket is done and the table never fills up with deleted buckets.
/// - At most 7/8 full: it doubles when an insertion would go past that. Linear probing's runs
///   grow long that full (a miss probes about 30 buckets just below it), but a probe reads one
///   control byte per bucket, 64 to a cache line, and goes to a bucket only when the tag
///   matches; at 3/4 the tables took more memory and hits were slower (Reports/purgeable-cache.md
///   was measured at 7/8). It halves when a removal leaves it less than 1/8 full, so a cache
///   that is flushed or shrunk by a memory warning gives its tables' memory back.
/// - The full hashes live in an array of their own, read only to grow and to shift back after a
///   removal, never by a lookup.
///
/// Not thread-safe: its shard's lock guards it. Not copyable: it owns its memory and frees it
/// in `deinit`, and a shard reaches it through `inout`, with no reference to count and no
/// dynamic exclusivity check. The one unsafe part of the shards' storage, confined here.
@usableFromInline
struct ShardTable<Key: Hashable, Element>: ~Copyable {
    @usableFromInline
    struct Bucket {
        @usableFromInline var key: Key
        @usableFromInline var element: Element
        @inlinable init(key: Key, element: Element) {
            self.key = key
            self.element = element
        }
    }

    /// Lookups in this shard that found their key, and that did not (`PurgeableCache` counts
    /// them here, under the shard's lock).
    @usableFromInline var hits = 0
    @usableFromInline var misses = 0
    /// Keys hit here and not yet told to the policy: for
    /// the policies whose state after hits does not depend on their order (SIEVE, S3-FIFO), a
    /// hit is kept here, under the lock the lookup holds anyway (`PurgeableCache.object`).
    @usableFromInline var pendingKeys: [Key] = []
    /// `pendingKeys`' slots in the policy (`CacheSlot`), one for one.
    @usableFromInline var pendingSlots: [Int32] = []

    /// Buckets (a power of two).
    @usableFromInline private(set) var capacity: Int
    @usableFromInline private(set) var count = 0
    /// capacity - 1: a hash's bucket is `hash & mask`.
    @usableFromInline private(set) var mask: Int
    @usableFromInline private(set) var controls: UnsafeMutablePointer<UInt8>
    @usableFromInline private(set) var hashes: UnsafeMutablePointer<Int>
    /// Initialized exactly where the control byte is not 0.
    @usableFromInline private(set) var buckets: UnsafeMutablePointer<Bucket>
    /// The block the three arrays live in, as `malloc` gave it (`allocate`).
    @usableFromInline private(set) var block: UnsafeMutableRawPointer

    @inlinable static var empty: UInt8 { 0 }
    @inlinable static var initialCapacity: Int { 16 }

    /// A hash's control byte: bits 50 to 56 of the hash (the shard is chosen by its top bits and
    /// the bucket by its low ones), with the top bit set.
    @inlinable static func tag(_ hash: Int) -> UInt8 {
        0x80 | UInt8(truncatingIfNeeded: UInt(bitPattern: hash) &>> 50) & 0x7F
    }

    @inlinable init() {
        capacity = Self.initialCapacity
        mask = capacity - 1
        (block, controls, hashes, buckets) = Self.allocate(capacity)
    }

    deinit {
        for i in 0..<capacity where controls[i] != Self.empty { (buckets + i).deinitialize(count: 1) }
        free(block)
    }

    /// One block for the three arrays: the buckets first, aligned to a cache line so that a bucket
    /// whose size divides 64 (32 bytes for an `Int` key and a reference) never straddles two, then
    /// the hashes, then the control bytes (all 0).
    /// The block comes from `malloc` (63 bytes more, the buckets starting at its first multiple of
    /// 64) and goes back with `free`: `UnsafeMutableRawPointer.allocate` would take it from
    /// aligned_alloc, which the allocation counter that the micro-benchmarks' gate preloads does
    /// not see, and it then crashes freeing it (it reads a header before the pointer).
    @inlinable
    static func allocate(_ capacity: Int) -> (UnsafeMutableRawPointer, UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<Int>, UnsafeMutablePointer<Bucket>) {
        precondition(MemoryLayout<Bucket>.alignment <= 64, "internal: a bucket aligned beyond a cache line")
        let bucketBytes = capacity * MemoryLayout<Bucket>.stride
        let hashesOffset = (bucketBytes + MemoryLayout<Int>.alignment - 1) / MemoryLayout<Int>.alignment * MemoryLayout<Int>.alignment
        let controlsOffset = hashesOffset + capacity * MemoryLayout<Int>.stride
        guard let block = malloc(controlsOffset + capacity + 63) else {
            fatalError("out of memory for a cache shard of \(capacity) buckets")
        }
        let base = block.alignedUp(toMultipleOf: 64)
        let controls = (base + controlsOffset).bindMemory(to: UInt8.self, capacity: capacity)
        controls.initialize(repeating: empty, count: capacity)
        let hashes = (base + hashesOffset).bindMemory(to: Int.self, capacity: capacity)
        return (block, controls, hashes, base.bindMemory(to: Bucket.self, capacity: capacity))
    }

    /// The bucket holding `key` (whose hash is `hash`), or nil.
    @inlinable
    func find(_ key: Key, hash: Int) -> Int? {
        let tag = Self.tag(hash)
        var i = hash & mask
        while true {
            let c = controls[i]
            if c == Self.empty { return nil }
            if c == tag && buckets[i].key == key { return i }
            i = (i &+ 1) & mask
        }
    }

    /// Runs `body` on the element in bucket `index` (from `find`), in place.
    @inlinable
    func withElement<R>(at index: Int, _ body: (inout Element) -> R) -> R {
        assert(index >= 0 && index < capacity && controls[index] != Self.empty, "internal: no element in that bucket")
        return body(&buckets[index].element)
    }

    /// The element stored under `key`, or nil.
    @inlinable
    func element(forKey key: Key, hash: Int) -> Element? {
        find(key, hash: hash).map { buckets[$0].element }
    }

    /// Stores `element` under `key`; returns the element it replaced, if any.
    @inlinable @discardableResult
    mutating func updateValue(_ element: Element, forKey key: Key, hash: Int) -> Element? {
        if let i = find(key, hash: hash) {
            return withElement(at: i) { old in
                defer { old = element }
                return old
            }
        }
        if (count + 1) * 8 > capacity * 7 { grow() }
        var i = hash & mask
        while controls[i] != Self.empty { i = (i &+ 1) & mask }
        controls[i] = Self.tag(hash)
        hashes[i] = hash
        (buckets + i).initialize(to: Bucket(key: key, element: element))
        count += 1
        return nil
    }

    /// Removes `key`; returns its element, or nil if it was not there.
    @inlinable @discardableResult
    mutating func removeValue(forKey key: Key, hash: Int) -> Element? {
        guard var hole = find(key, hash: hash) else { return nil }
        let removed = (buckets + hole).move().element
        count -= 1
        // Shift the rest of the probe run back over the hole: a bucket moves into it unless its
        // home (hash & mask) lies cyclically after the hole, up to where the bucket is.
        var j = hole
        while true {
            j = (j &+ 1) & mask
            if controls[j] == Self.empty { break }
            let home = hashes[j] & mask
            let stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j)
            if stays { continue }
            controls[hole] = controls[j]
            hashes[hole] = hashes[j]
            (buckets + hole).moveInitialize(from: buckets + j, count: 1)
            hole = j
        }
        controls[hole] = Self.empty
        // Memory goes back when most entries have gone (a memory warning, a flush, a removal of
        // all): at 1/8 full the table halves, to 1/4 full, far from the 7/8 at which it doubles.
        if capacity > Self.initialCapacity && count * 8 < capacity { resize(to: capacity / 2) }
        return removed
    }

    /// Calls `body` with every key and element (in no particular order).
    @inlinable
    func forEach(_ body: (Key, Element) -> Void) {
        for i in 0..<capacity where controls[i] != Self.empty { body(buckets[i].key, buckets[i].element) }
    }

    /// Doubles the buckets, moving every element to its place in the new table.
    @inlinable
    mutating func grow() {
        resize(to: capacity * 2)
    }

    /// Moves every element into a table of `newCapacity` buckets (a power of two, more than
    /// `count`).
    @inlinable
    mutating func resize(to newCapacity: Int) {
        assert(newCapacity > count && newCapacity & (newCapacity - 1) == 0, "internal: a shard table resized below its count or off a power of two")
        let (oldBlock, oldControls, oldHashes, oldBuckets, oldCapacity) = (block, controls, hashes, buckets, capacity)
        capacity = newCapacity
        mask = capacity - 1
        (block, controls, hashes, buckets) = Self.allocate(capacity)
        for j in 0..<oldCapacity where oldControls[j] != Self.empty {
            var i = oldHashes[j] & mask
            while controls[i] != Self.empty { i = (i &+ 1) & mask }
            controls[i] = oldControls[j]
            hashes[i] = oldHashes[j]
            (buckets + i).moveInitialize(from: oldBuckets + j, count: 1)
        }
        free(oldBlock)
    }
}
