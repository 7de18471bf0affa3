# NanoBPF board build: Vivado batch mode, non-project flow, RTL to bitstream and SPI flash image.
#
#   vivado -mode batch -nojournal -log OUT/vivado.log -source boards/genesys2/vivado/build.tcl \
#          -tclargs FILES_F XDC OUT TOP PART JOBS [FLASH_INTERFACE FLASH_SIZE_MIB]
#
#   FILES_F          file list in Verilator `-f` format (nanobpf-bitstream writes it): one entry
#                    per token; `#` and `//` start a comment; `+incdir+DIR[+DIR...]`, `+define+X[=Y][+...]`;
#                    every other token is a source file: `.sv` is read as SystemVerilog, `.v` as Verilog,
#                    anything else is refused. Relative paths are relative to the directory of FILES_F.
#                    Files are read in list order (packages before their users), a missing one is an error.
#   XDC              constraints (pins, I/O standards, clocks), e.g. constraints/genesys2.xdc
#   OUT              output directory: checkpoints, reports, <name>.bit and <name>.bin
#   TOP              top module, e.g. nanobpf_genesys2_top; <name> is TOP without a trailing `_top`
#   PART             e.g. xc7k325tffg900-2
#   JOBS             threads for Vivado (general.maxThreads, clamped to 1..8)
#   FLASH_INTERFACE  configuration flash interface for write_cfgmem (default SPIx4)
#   FLASH_SIZE_MIB   configuration flash size in MiB (default 32: the Genesys2's S25FL256S)
#   (nanobpf-bitstream passes XDC, TOP, PART and the flash's from the board's board.toml.)
#
# Outputs in OUT: post_synth.dcp, post_place.dcp, post_route.dcp; post_synth_utilization.rpt,
# utilization.rpt, timing_summary.rpt, clock_interaction.rpt, drc.rpt, timing.txt (WNS/WHS);
# <name>.bit (JTAG, volatile) and <name>.bin (+ .prm) for the configuration flash.
# Exits 1 with a message when the inputs are wrong or timing is not met after routing (WNS < 0 or
# WHS < 0); then no bitstream is written. A `### <stage>` line is printed before each stage.
#
# No IP (.xci) and no block design: the MMCM, the differential clock buffer, IDELAYE2/IDELAYCTRL and
# ODDR/IDDR primitives are instantiated directly in the board RTL (boards/<board>/rtl), and the DDR3
# controller is LiteDRAM's generated Verilog (listed in FILES_F by nanobpf-bitstream, `.v`: its core and
# its init CPU; the $readmemh files of its BIOS ROM/SRAM and of the firmware image ROM are named by
# absolute path in the sources), so the flow only reads sources and constraints. Vivado synthesis predefines the SYNTHESIS macro, which keeps the
# simulation-only code (e.g. $value$plusargs in nanobpf_main_mem) out.

proc stage {name} {
    puts "### $name"
    flush stdout
}

proc die {msg} {
    puts "ERROR: \[nanobpf build.tcl\] $msg"
    flush stdout
    exit 1
}

if {[llength $argv] < 6 || [llength $argv] > 8} {
    die "usage: -tclargs FILES_F XDC OUT TOP PART JOBS \[FLASH_INTERFACE FLASH_SIZE_MIB\] (got: $argv)"
}
lassign $argv files_f xdc out top part jobs flash_if flash_mib
if {$flash_if eq ""} { set flash_if SPIx4 }
if {$flash_mib eq ""} { set flash_mib 32 }
if {![string is integer -strict $jobs] || $jobs < 1} { die "JOBS must be a positive integer, got '$jobs'" }
if {![string is integer -strict $flash_mib] || $flash_mib < 1} { die "FLASH_SIZE_MIB must be a positive integer, got '$flash_mib'" }
set name [regsub {_top$} $top ""]

# ---------------------------------------------------------------- file list
# Returns {sources incdirs defines}; sources is a list of {kind path} with kind sv or verilog.
proc parse_file_list {path} {
    if {![file isfile $path]} { die "file list $path does not exist" }
    set base [file dirname [file normalize $path]]
    set fh [open $path r]
    set text [read $fh]
    close $fh
    set sources {}
    set incdirs {}
    set defines {}
    set lineno 0
    foreach line [split $text "\n"] {
        incr lineno
        # a comment starts at `#` or `//` at the start of the line or after white space
        regsub {(^|\s)(#|//).*$} $line "" line
        foreach tok [regexp -all -inline {\S+} $line] {
            if {[string match "+incdir+*" $tok]} {
                foreach d [split [string range $tok 8 end] "+"] {
                    if {$d eq ""} continue
                    set d [file join $base $d]
                    if {![file isdirectory $d]} { die "$path:$lineno: include directory $d does not exist" }
                    lappend incdirs $d
                }
            } elseif {[string match "+define+*" $tok]} {
                foreach d [split [string range $tok 8 end] "+"] {
                    if {$d ne ""} { lappend defines $d }
                }
            } elseif {[string match "+*" $tok] || [string match "-*" $tok]} {
                die "$path:$lineno: option '$tok' is not supported (only +incdir+ and +define+)"
            } else {
                set f [file join $base $tok]
                if {![file isfile $f]} { die "$path:$lineno: source file $f does not exist" }
                switch -- [string tolower [file extension $f]] {
                    .sv { lappend sources [list sv $f] }
                    .v  { lappend sources [list verilog $f] }
                    default { die "$path:$lineno: $f: not a .sv or .v source (headers belong in an +incdir+ directory)" }
                }
            }
        }
    }
    if {[llength $sources] == 0} { die "$path lists no source files" }
    return [list $sources $incdirs $defines]
}

# ---------------------------------------------------------------- read
stage "read sources ($files_f)"
lassign [parse_file_list $files_f] sources incdirs defines
if {![file isfile $xdc]} { die "constraints $xdc do not exist" }
file mkdir $out
set threads [expr {$jobs > 8 ? 8 : $jobs}]
set_param general.maxThreads $threads
puts "nanobpf: [llength $sources] sources, [llength $incdirs] include dirs, defines: $defines; top $top, part $part, $threads thread(s)"
foreach src $sources {
    lassign $src kind f
    if {$kind eq "sv"} {
        read_verilog -sv $f
    } else {
        read_verilog $f
    }
}
stage "read constraints ($xdc)"
read_xdc $xdc

# ---------------------------------------------------------------- synthesis
stage "synth_design"
set synth_args [list -top $top -part $part -flatten_hierarchy rebuilt]
if {[llength $incdirs]} { lappend synth_args -include_dirs $incdirs }
if {[llength $defines]} { lappend synth_args -verilog_define $defines }
synth_design {*}$synth_args
write_checkpoint -force [file join $out post_synth.dcp]
report_utilization -file [file join $out post_synth_utilization.rpt]

# ---------------------------------------------------------------- implementation
stage "opt_design"
opt_design
stage "place_design"
place_design
stage "phys_opt_design"
phys_opt_design
write_checkpoint -force [file join $out post_place.dcp]
stage "route_design"
route_design
write_checkpoint -force [file join $out post_route.dcp]

stage "reports"
report_utilization -file [file join $out utilization.rpt]
report_timing_summary -max_paths 10 -report_unconstrained -file [file join $out timing_summary.rpt]
report_clock_interaction -file [file join $out clock_interaction.rpt]
report_drc -file [file join $out drc.rpt]

# ---------------------------------------------------------------- timing gate
stage "timing check"
# Worst setup (max delay) and hold (min delay) slack over all constrained paths of the routed design.
proc worst_slack {type} {
    set paths [get_timing_paths -delay_type $type -max_paths 1 -nworst 1]
    if {[llength $paths] == 0} { return "" }
    set slack [get_property SLACK $paths]
    # unconstrained paths have no finite slack
    if {![string is double -strict $slack] || [string match -nocase "*inf*" $slack]} { return "" }
    return $slack
}
set wns [worst_slack max]
set whs [worst_slack min]
set fh [open [file join $out timing.txt] w]
puts $fh "WNS $wns"
puts $fh "WHS $whs"
close $fh
puts "nanobpf: WNS $wns ns, WHS $whs ns (details: [file join $out timing_summary.rpt])"
if {$wns eq "" || $whs eq ""} {
    die "no constrained timing path (WNS '$wns', WHS '$whs'): are the clocks defined in $xdc? No bitstream written. See [file join $out timing_summary.rpt]"
}
if {$wns < 0 || $whs < 0} {
    die "timing not met after routing: WNS $wns ns, WHS $whs ns; no bitstream written. See [file join $out timing_summary.rpt] and [file join $out clock_interaction.rpt]"
}

# ---------------------------------------------------------------- bitstream and flash image
stage "write_bitstream"
# The flash image below is read in quad mode: make the bitstream say so, unless the XDC already did.
if {[regexp {^SPIx([124])$} $flash_if -> width] &&
    [get_property BITSTREAM.CONFIG.SPI_BUSWIDTH [current_design]] in {"" NONE}} {
    set_property BITSTREAM.CONFIG.SPI_BUSWIDTH $width [current_design]
}
set bit [file join $out $name.bit]
write_bitstream -force $bit

stage "write_cfgmem"
# The bitstream at offset 0 of the flash; the XC7K325T image (~11 MB) stays below 16 MiB, so the
# FPGA's 3-byte SPI addressing reaches all of it.
write_cfgmem -force -format bin -interface $flash_if -size $flash_mib \
    -loadbit [list up 0x0 $bit] -file [file join $out $name.bin]

stage "done"
puts "nanobpf: bitstream [file join $out $name.bit], flash image [file join $out $name.bin]"
