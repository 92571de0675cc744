"""``einsum``: PyTorch's subscript form, lowered to diagonal, sum, permute, reshape and matmul.

Each operand first loses its repeated labels (a diagonal) and the labels nobody else needs (a
sum); then operands contract pairwise from the left, each pair as one batched matmul (or a
broadcast multiply when nothing is summed). Everything is frontend ops, so einsum runs on every
backend and differentiates through their rules.
"""
from .errors import ArgumentError, ArgumentTypeError, ShapeError
from .tensor import Tensor


def _labels(term, op):
    """[label] of one subscript term: letters as themselves, ``...`` as the one entry ``"..."``."""
    out = []
    i = 0
    while i < len(term):
        ch = term[i]
        if ch == ".":
            if term[i:i + 3] != "..." or "..." in out:
                raise ArgumentError("%s: expected at most one '...' per term, found %r" % (op, term))
            out.append("...")
            i += 3
            continue
        if not ("a" <= ch <= "z" or "A" <= ch <= "Z"):
            raise ArgumentError("%s: subscripts must be letters or '...', found %r in %r" % (op, ch, term))
        out.append(ch)
        i += 1
    return out


def _expand(term, ndim, ell, op, k):
    """The labels of operand ``k`` with ``...`` spelled out as ``ell`` dims (right-aligned names)."""
    letters = [c for c in term if c != "..."]
    if "..." not in term:
        if len(letters) != ndim:
            raise ShapeError("%s: operand %d has %d dims but its subscripts %r name %d"
                             % (op, k, ndim, "".join(term), len(letters)))
        return letters
    n = ndim - len(letters)
    if n < 0:
        raise ShapeError("%s: operand %d has %d dims, fewer than the %d letters of %r"
                         % (op, k, ndim, len(letters), "".join(term)))
    at = term.index("...")
    return term[:at] + ["...%d" % (ell - n + i) for i in range(n)] + term[at + 1:]


def _parse(equation, operands, op):
    """(per operand its labels with ``...`` spelled out, the output's labels)."""
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise ArgumentError("%s: expected at most one '->', found %r" % (op, equation))
    lhs, arrow, rhs = eq.partition("->")
    terms = [_labels(t, op) for t in lhs.split(",")]
    if len(terms) != len(operands):
        raise ArgumentError("%s: the equation %r names %d operands, found %d"
                            % (op, equation, len(terms), len(operands)))
    ell = 0
    for term, t in zip(terms, operands):
        if "..." in term:
            ell = max(ell, len(t.shape) - (len(term) - 1))
    expanded = [_expand(term, len(t.shape), ell, op, k) for k, (term, t) in enumerate(zip(terms, operands))]
    ell_labels = ["...%d" % i for i in range(ell)]
    if arrow:
        out = _labels(rhs, op)
        for c in out:
            if c != "..." and out.count(c) > 1:
                raise ArgumentError("%s: output subscript %r appears more than once in %r" % (op, c, equation))
            if c != "..." and not any(c in term for term in terms):
                raise ArgumentError("%s: output subscript %r does not appear in the inputs of %r"
                                    % (op, c, equation))
        if "..." in out:
            at = out.index("...")
            out = out[:at] + ell_labels + out[at + 1:]
    else:  # implicit: the ellipsis dims, then the letters used once, in alphabetical order
        counts = {}
        for term in expanded:
            for c in term:
                counts[c] = counts.get(c, 0) + 1
        once = sorted(c for c in counts if counts[c] == 1 and not c.startswith("..."))
        out = ell_labels + once
    return expanded, out


def _sizes(expanded, operands, op):
    """label -> its size; size-1 dims broadcast against the others, as PyTorch allows."""
    sizes = {}
    for k, (labels, t) in enumerate(zip(expanded, operands)):
        for c, n in zip(labels, t.shape):
            have = sizes.get(c, 1)
            if have != n and have != 1 and n != 1:
                name = "..." if c.startswith("...") else c
                raise ShapeError("%s: subscript %r has size %d in operand %d but %d before"
                                 % (op, name, n, k, have))
            if n != 1 or c not in sizes:
                sizes[c] = n if have == 1 else have
    return sizes


def _diagonalize(t, labels):
    """``t`` with each repeated label taken along its diagonal; the labels of the result."""
    from .linalg import diagonal
    labels = list(labels)
    i = 0
    while i < len(labels):
        c = labels[i]
        j = labels.index(c, i + 1) if labels.count(c) > 1 else -1
        if j < 0:
            i += 1
            continue
        if t.shape[i] != t.shape[j]:
            raise ShapeError("einsum: repeated subscript %r needs equal sizes, found %d and %d"
                             % (c, t.shape[i], t.shape[j]))
        t = diagonal(t, 0, i, j)  # the diagonal goes last
        labels = [x for k, x in enumerate(labels) if k != i and k != j] + [c]
    return t, labels


def _sum_labels(t, labels, drop):
    """``t`` summed over the dims whose labels are in ``drop``, and the labels left."""
    dims = tuple(i for i, c in enumerate(labels) if c in drop)
    if not dims:
        return t, labels
    return t.sum(dims), [c for c in labels if c not in drop]


def _arrange(t, labels, order, sizes):
    """``t`` permuted to ``order`` (labels it lacks become size-1 dims), broadcast to ``sizes``."""
    have = [c for c in order if c in labels]
    t = t.permute(tuple(labels.index(c) for c in have)) if have != labels else t
    shape = tuple(t.shape[have.index(c)] if c in have else 1 for c in order)
    t = t.reshape(shape)
    full = tuple(sizes[c] for c in order)
    return t.expand(full) if full != shape else t


def _contract(a, la, b, lb, keep, sizes):
    """``a`` and ``b`` multiplied, summed over their shared labels not in ``keep``."""
    from .shapes import numel
    shared = [c for c in la if c in lb]
    batch = [c for c in shared if c in keep]
    summed = [c for c in shared if c not in keep]
    only_a = [c for c in la if c not in lb]
    only_b = [c for c in lb if c not in la]
    nb = numel([sizes[c] for c in batch])
    m, k, n = numel([sizes[c] for c in only_a]), numel([sizes[c] for c in summed]), numel([sizes[c] for c in only_b])
    a = _arrange(a, la, batch + only_a + summed, sizes).reshape(nb, m, k)
    b = _arrange(b, lb, batch + summed + only_b, sizes).reshape(nb, k, n)
    out = a @ b if summed else a * b  # nothing summed: (nb, m, 1) * (nb, 1, n)
    labels = batch + only_a + only_b
    return out.reshape(tuple(sizes[c] for c in labels)), labels


def einsum(equation, *operands):
    """Einstein summation, PyTorch's form: ``einsum("bij,bjk->bik", a, b)``, ``"ii"`` (trace),
    ``"ii->i"`` (diagonal), ``"...ij->...ji"``; without ``->`` the output is the letters used once,
    alphabetically. Operands may also come as one list."""
    op = "einsum"
    if type(equation) is not str:
        raise ArgumentTypeError("%s: expected the equation as a str, found %s" % (op, type(equation).__name__))
    if len(operands) == 1 and type(operands[0]) in (list, tuple):
        operands = tuple(operands[0])
    if not operands:
        raise ArgumentError("%s: expected at least one operand" % op)
    for k, t in enumerate(operands):
        if type(t) is not Tensor:
            raise ArgumentTypeError("%s: operand %d is a %s, expected a tensor" % (op, k, type(t).__name__))
    expanded, out = _parse(equation, operands, op)
    sizes = _sizes(expanded, operands, op)
    work = []
    for k, (t, labels) in enumerate(zip(operands, expanded)):
        t, labels = _diagonalize(t, labels)
        later = set(out)
        for other in expanded[:k] + expanded[k + 1:]:
            later.update(other)
        t, labels = _sum_labels(t, labels, set(c for c in labels if c not in later))
        work.append((t, labels))
    t, labels = work[0]
    for k in range(1, len(work)):
        keep = set(out)
        for _, rest in work[k + 1:]:
            keep.update(rest)
        t, labels = _contract(t, labels, work[k][0], work[k][1], keep, sizes)
    t, labels = _sum_labels(t, labels, set(c for c in labels if c not in out))
    return _arrange(t, labels, out, sizes)
