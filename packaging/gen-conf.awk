# SPDX-License-Identifier: Apache-2.0
# Turns abuseguard --help (service/ag_config.c's one list of flags) into
# the packaged abuseguard.conf: every key but help, version and config
# (which the file refuses) commented out with its built-in default, but for
# the few the package sets to its own paths. Exits 1 when the help lists no
# flags, or no longer lists a key the package sets.
BEGIN {
    # The database in the unit's StateDirectory, the secrets in /etc, made
    # by the postinst.
    pkg["db"] = "/var/lib/abuseguard/policies.db"
    pkg["secret-file"] = "/etc/abuseguard/secret.key"
    pkg["admin-token-file"] = "/etc/abuseguard/admin.token"
    why["db"] = "in the unit's StateDirectory"
    why["secret-file"] = "made by the postinst, mode 0600"
    why["admin-token-file"] = "made by the postinst, mode 0600"
    print "# abuseguard configuration, read by abuseguard.service through"
    print "# --config. One \"key = value\" a line; the keys are the flags' names"
    print "# without the dashes (abuseguard --help, or"
    print "# /usr/share/doc/abuseguard/abuseguard-help.txt). Every key is shown"
    print "# with its built-in default, commented out: uncomment one to change"
    print "# it. Flags on the command line and ABUSEGUARD_* environment"
    print "# variables win over this file. Secrets stay in their own files."
    print "#"
    print "# Generated from abuseguard --help when the package was built."
}
/^  --/ {
    name = $1
    sub(/^--/, "", name)
    help = $0
    sub(/^  --[^ ]+ +/, "", help)
    next
}
name != "" && /^ +\(/ {
    def = ""
    if (match($0, /, default .*\)$/))
        def = substr($0, RSTART + 10, RLENGTH - 11)
    if (name != "help" && name != "version" && name != "config") {
        keys++
        print ""
        print "# " help
        if (name in pkg) {
            print "# (the package's: " why[name] \
                (def != "" ? "; built-in default " def : "") ")"
            print name " = " pkg[name]
            seen[name] = 1
        } else {
            print "#" name " =" (def != "" ? " " def : "")
        }
    }
    name = ""
}
END {
    if (keys == 0) {
        print "gen-conf.awk: no flags in the help text" > "/dev/stderr"
        exit 1
    }
    for (k in pkg)
        if (!(k in seen)) {
            print "gen-conf.awk: the help lists no --" k > "/dev/stderr"
            exit 1
        }
}
