/* `explore ir`: prints a model's inter-operator IR after the chosen passes, and with
 * --lowered its intra-operator program (GEMM and traversal instances). */
#ifndef IRC_IRCLI_H
#define IRC_IRCLI_H

int irc_main(int argc, char **argv);

#endif
