"""`python -m hcq devices`: the device registry, like `hcq devices`."""

import sys

import hcq


def main(argv):
    if argv[1:] == ["devices"]:
        print(hcq.devices())
        return 0
    print("usage: python -m hcq devices", file=sys.stderr)
    return 2


sys.exit(main(sys.argv))
