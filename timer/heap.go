package timer

// queue is a binary min-heap of items that record their own position, so
// that an item can be fixed or removed in O(log n) when its key changes.
// The claim loop keeps its slots and topics in queues ordered by when they
// next need serving; an idle item is in none, which is what keeps the cost
// of a pass independent of the number of idle slots and topics.
type queue[T interface{ heapIndex() *int }] struct {
	items []T
	less  func(a, b T) bool
}

func (q *queue[T]) len() int { return len(q.items) }

// peek returns the least item, or the zero T and false when q is empty.
func (q *queue[T]) peek() (T, bool) {
	if len(q.items) == 0 {
		var zero T
		return zero, false
	}
	return q.items[0], true
}

// push adds x, which must not be in q.
func (q *queue[T]) push(x T) {
	*x.heapIndex() = len(q.items)
	q.items = append(q.items, x)
	q.up(len(q.items) - 1)
}

// pop removes and returns the least item; q must not be empty.
func (q *queue[T]) pop() T {
	x := q.items[0]
	q.removeAt(0)
	return x
}

// fix restores the order after x's key changed, adding x if it is not in q.
func (q *queue[T]) fix(x T) {
	i := *x.heapIndex()
	if i < 0 {
		q.push(x)
		return
	}
	if !q.down(i) {
		q.up(i)
	}
}

// remove takes x out of q if it is there.
func (q *queue[T]) remove(x T) {
	if i := *x.heapIndex(); i >= 0 {
		q.removeAt(i)
	}
}

func (q *queue[T]) removeAt(i int) {
	last := len(q.items) - 1
	x := q.items[i]
	if i != last {
		q.swap(i, last)
	}
	var zero T
	q.items[last] = zero
	q.items = q.items[:last]
	*x.heapIndex() = -1
	if i != last && !q.down(i) {
		q.up(i)
	}
}

func (q *queue[T]) swap(i, j int) {
	q.items[i], q.items[j] = q.items[j], q.items[i]
	*q.items[i].heapIndex() = i
	*q.items[j].heapIndex() = j
}

func (q *queue[T]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(q.items[i], q.items[p]) {
			return
		}
		q.swap(i, p)
		i = p
	}
}

// down sifts item i down and reports whether it moved.
func (q *queue[T]) down(i int) bool {
	start := i
	n := len(q.items)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && q.less(q.items[r], q.items[l]) {
			m = r
		}
		if !q.less(q.items[m], q.items[i]) {
			break
		}
		q.swap(i, m)
		i = m
	}
	return i > start
}
