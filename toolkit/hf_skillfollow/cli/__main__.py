from hf_skillfollow.cli import main

main()
