"""``python -m odradek`` runs the ``odradek`` command."""

from odradek.cli.main import main

if __name__ == "__main__":
    main()
