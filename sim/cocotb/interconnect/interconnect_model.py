"""Reference semantics for the interconnect test: AXI burst addresses and AXI atomic results."""

MASK64 = (1 << 64) - 1
FIXED, INCR, WRAP = 0, 1, 2


def beat_addrs(addr, length, size, burst):
    """Addresses of the `length + 1` beats of a burst (AXI4 A3.4.1)."""
    n, nbytes = length + 1, 1 << size
    if burst == FIXED:
        return [addr] * n
    aligned = addr & ~(nbytes - 1)
    if burst == INCR:
        return [addr] + [aligned + i * nbytes for i in range(1, n)]
    total = n * nbytes
    lower = addr & ~(total - 1)
    return [lower + (aligned - lower + i * nbytes) % total for i in range(n)]


def atomic(atop, size, old, data):
    """New value of an AXI atomic on `size` bytes (2 or 3), little endian, values already in lane 0."""
    bits = 8 << size
    mask = (1 << bits) - 1
    a, b = old & mask, data & mask

    def signed(x):
        return x - (1 << bits) if x >> (bits - 1) else x

    if atop >> 4 == 3:  # AtomicSwap
        return b
    op = atop & 7
    return [a + b, a & ~b, a ^ b, a | b,
            a if signed(a) > signed(b) else b, a if signed(a) < signed(b) else b,
            max(a, b), min(a, b)][op] & mask
