from git_korus_mail.cli import main

raise SystemExit(main())
