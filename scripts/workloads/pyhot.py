"""CPU-bound Python workload with known hot spots, for report benchmarks and tests.

Pure-Python loops keep the interpreter (libpython's _PyEval_EvalFrameDefault and the object
helpers it inlines) hot; `sorted` of tuples exercises the C sort and rich comparison.
Usage: python3 pyhot.py [SECONDS]  (default 4)
"""
import sys
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def dict_churn(n):
    d = {}
    for i in range(n):
        d[str(i)] = i * i
    return sum(d.values())


def sort_tuples(n):
    data = [((i * 7919) % 1009, str(i)) for i in range(n)]
    return sorted(data)[n // 2]


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
    end = time.monotonic() + seconds
    acc = 0
    while time.monotonic() < end:
        acc += fib(20)
        acc += dict_churn(20000)
        acc += sort_tuples(20000)[0]
    print("pyhot:", acc % 1000)


if __name__ == "__main__":
    main()
