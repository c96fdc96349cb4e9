from xspec.cli import main

main()
