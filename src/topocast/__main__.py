from .cli.main import console_script

console_script()
