/// Entries of a policy in flat arrays, with intrusive doubly linked lists threaded through them
/// by index. One dictionary lookup per request, none for a hit that comes with its slot
/// (`CacheSlot`); no allocation per entry once slots are reused. A slot stays the same from
/// `add` to `release`, whichever lists it moves between.
@usableFromInline
struct NodeStore<Key: Hashable & Sendable>: Sendable {
    @inlinable static var none: Int32 { -1 }

    /// A slot's key, its neighbours on its list and its per-policy bits, side by side (24 bytes
    /// for an `Int` key): a hit told with its slot checks the key and moves the entry reading and
    /// writing one cache line per entry it touches, not one in each of five arrays.
    @usableFromInline
    struct Links: Sendable {
        /// nil while the slot is free.
        @usableFromInline var key: Key?
        @usableFromInline var newer: Int32
        @usableFromInline var older: Int32
        /// Per-policy bits: a frequency counter, a visited bit.
        @usableFromInline var mark: UInt8 = 0
        /// Which of the policy's lists the slot is on.
        @usableFromInline var list: UInt8 = 0
        @inlinable init(key: Key?, newer: Int32, older: Int32) {
            self.key = key
            self.newer = newer
            self.older = older
        }
    }

    @usableFromInline var costs: [Int] = []
    @usableFromInline var links: [Links] = []
    @usableFromInline var free: [Int32] = []
    @usableFromInline var index: [Key: Int32] = [:]

    @inlinable var count: Int { index.count }

    @inlinable init() {}

    @inlinable func slot(of key: Key) -> Int32? { index[key] }

    @inlinable func key(_ slot: Int32) -> Key { links[Int(slot)].key! }

    /// Whether `slot` is a slot of this store that holds `key` now.
    @inlinable func holds(_ slot: Int32, _ key: Key) -> Bool {
        slot >= 0 && Int(slot) < links.count && links[Int(slot)].key == key
    }
    @inlinable func cost(_ slot: Int32) -> Int { costs[Int(slot)] }

    /// A new slot for `key` (not on any list yet).
    @inlinable mutating func add(_ key: Key, cost: Int) -> Int32 {
        let slot: Int32
        if let reused = free.popLast() {
            slot = reused
            links[Int(slot)].key = key
            costs[Int(slot)] = cost
            links[Int(slot)].mark = 0
            links[Int(slot)].list = 0
        } else {
            slot = Int32(links.count)
            costs.append(cost)
            links.append(Links(key: key, newer: Self.none, older: Self.none))
        }
        index[key] = slot
        return slot
    }

    /// Frees a slot (it must be off every list). Returns its key.
    @discardableResult
    @inlinable mutating func release(_ slot: Int32) -> Key {
        let key = links[Int(slot)].key!
        links[Int(slot)].key = nil
        index.removeValue(forKey: key)
        free.append(slot)
        return key
    }

    // MARK: Lists

    /// A list's ends and its totals. `head` is the newest entry, `tail` the oldest.
    @usableFromInline
    struct List: Sendable {
        @usableFromInline var head: Int32 = NodeStore.none
        @usableFromInline var tail: Int32 = NodeStore.none
        @usableFromInline var count = 0
        @usableFromInline var cost = 0
        @inlinable var isEmpty: Bool { count == 0 }
        @inlinable init() {}
    }

    @inlinable mutating func pushHead(_ slot: Int32, _ list: inout List) {
        let s = Int(slot)
        links[s].newer = Self.none
        links[s].older = list.head
        if list.head != Self.none { links[Int(list.head)].newer = slot } else { list.tail = slot }
        list.head = slot
        list.count += 1
        list.cost += costs[s]
    }

    @inlinable mutating func unlink(_ slot: Int32, _ list: inout List) {
        detach(slot, &list)
        list.count -= 1
        list.cost -= costs[Int(slot)]
    }

    /// Takes `slot` off its list's links, leaving the list's count and cost as they were.
    @inlinable mutating func detach(_ slot: Int32, _ list: inout List) {
        let s = Int(slot)
        let l = links[s]
        if l.newer != Self.none { links[Int(l.newer)].older = l.older } else { list.head = l.older }
        if l.older != Self.none { links[Int(l.older)].newer = l.newer } else { list.tail = l.newer }
        links[s].newer = Self.none
        links[s].older = Self.none
    }

    /// Moves `slot` (on `list`) to its head. Its count and cost stay as they are, so the entry's
    /// cost is not read: a hit touches only the links of the entry and of its neighbours.
    @inlinable mutating func moveToHead(_ slot: Int32, _ list: inout List) {
        guard list.head != slot else { return }
        detach(slot, &list)
        let oldHead = list.head
        links[Int(slot)].newer = Self.none
        links[Int(slot)].older = oldHead
        if oldHead != Self.none { links[Int(oldHead)].newer = slot } else { list.tail = slot }
        list.head = slot
    }

    /// The next newer entry (towards the head), or none.
    @inlinable func newerThan(_ slot: Int32) -> Int32 { links[Int(slot)].newer }
}
