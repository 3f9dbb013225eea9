from ctxkeep.cli import main

raise SystemExit(main())
