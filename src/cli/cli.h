/* Subcommands of the dotlm executable. Each parses its own argv (argv[0] is
 * the subcommand name), prints its own --help, and returns the exit code. */
#pragma once
int cmd_run(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_kernels(int argc, char **argv);
