# SPDX-License-Identifier: Apache-2.0
#
# Writes a small MMDB file for tests, or a large random one for benchmarks,
# with MaxMind's own writer (Debian's libmaxmind-db-writer-perl), so that
# the files our reader is tested on come from the reference implementation
# and not from a second encoder of ours.
#
#   perl mmdb_write.pl [--spec SPEC.json] OUT.mmdb     (spec from stdin
#                                                       without --spec)
#   perl mmdb_write.pl --generate N [--seed S] [--spec SPEC.json] OUT.mmdb
#
# The spec (JSON; every key optional except networks, unless generating):
#   {"ip_version": 4 | 6,                      default 6
#    "database_type": "GeoLite2-Country",      default "Test-DB"
#    "ipv4_aliases": true | false,             alias_ipv6_to_ipv4, default
#                                              false (true generating;
#                                              ip_version 6 only)
#    "layout": "maxmind" | "ipinfo",           default "maxmind"
#    "record_size": 24 | 28 | 32,              default 24 (28 generating)
#    "build_epoch": 1700000000,                default now
#    "networks": [{"cidr": "81.2.69.0/24", "country": "GB",
#                  "asn": 20712, "as_org": "Andrews & Arnold",
#                  "city": "London", "country_name": "United Kingdom",
#                  "latitude": 51.5, "longitude": -0.13,
#                  "accuracy_radius": 20},
#                 ...]}
#
# Layout "maxmind" writes {"country": {"iso_code": "GB"}} when a network
# has a country (and {"registered_country": {"iso_code": ...}} when it
# has a registered_country), {"autonomous_system_number": 20712,
# "autonomous_system_organization": "..."} when it has an asn, and
# {"city": {"names": {"en": "London"}}} when it has a city (a City
# database), and {"location": {"latitude": 51.5, "longitude": -0.13,
# "accuracy_radius": 20}} when it has a latitude (the radius only when
# given). Layout "ipinfo" writes IPinfo Lite's flat record:
# {"asn": "AS20712", "as_name": "...", "country_code": "GB",
# "country": "United Kingdom"} (IPinfo's "country" is the country's
# name, country_name or else the code: a string,
# which a reader must not mistake for MaxMind's map); an asn given as a
# JSON string is written as it is, so a test can write a malformed one.
#
# Reserved networks are kept (remove_reserved_networks off), so tests may
# use the documentation ranges (192.0.2.0/24, 2001:db8::/32).
#
# --generate N writes N random, disjoint networks, each with a country
# and an ASN, as a stand-in for a GeoLite2-City sized database (see
# generate below); --seed makes it repeatable (Perl's rand is drand48 on
# every platform).
use strict;
use warnings;
use feature 'state';

use Getopt::Long qw(GetOptions);
use B ();
use JSON::PP ();
use MaxMind::DB::Writer::Tree ();

my ( $spec_path, $generate, $seed );
GetOptions(
    'spec=s'     => \$spec_path,
    'generate=i' => \$generate,
    'seed=i'     => \$seed,
) or usage();
usage() unless @ARGV == 1;
my $out = $ARGV[0];

sub usage {
    print {*STDERR}
        "usage: $0 [--spec SPEC.json] OUT.mmdb\n"
        . "       $0 --generate N [--seed S] [--spec SPEC.json] OUT.mmdb\n";
    exit 2;
}

my $spec = {};
if ( defined $spec_path || !defined $generate ) {
    my $text = do {
        local $/;
        my $fh;
        if ( !defined $spec_path || $spec_path eq '-' ) {
            $fh = \*STDIN;
        }
        else {
            open $fh, '<', $spec_path or die "$spec_path: $!\n";
        }
        <$fh>;
    };
    $spec = JSON::PP->new->decode($text);
}

my $ip_version = $spec->{ip_version} // 6;
my $layout     = $spec->{layout}     // 'maxmind';
die "layout must be maxmind or ipinfo\n"
    unless $layout eq 'maxmind' || $layout eq 'ipinfo';
die "ip_version must be 4 or 6\n"
    unless $ip_version == 4 || $ip_version == 6;

my %types = (
    maxmind => {
        country                        => 'map',
        registered_country             => 'map',
        iso_code                       => 'utf8_string',
        autonomous_system_number       => 'uint32',
        autonomous_system_organization => 'utf8_string',
        city                           => 'map',
        names                          => 'map',
        en                             => 'utf8_string',
        location                       => 'map',
        latitude                       => 'double',
        longitude                      => 'double',
        accuracy_radius                => 'uint16',
    },
    ipinfo => {
        asn          => 'utf8_string',
        as_name      => 'utf8_string',
        country_code => 'utf8_string',
        country      => 'utf8_string',
    },
);
my $key_types = $types{$layout};

my $tree = MaxMind::DB::Writer::Tree->new(
    ip_version    => $ip_version,
    record_size   => $spec->{record_size} // ( defined $generate ? 28 : 24 ),
    database_type => $spec->{database_type}
        // ( defined $generate ? 'GeoLite2-City' : 'Test-DB' ),
    languages                => ['en'],
    description              => { en => 'abuseguard test database' },
    alias_ipv6_to_ipv4       => $spec->{ipv4_aliases}
        // ( defined $generate && $ip_version == 6 ),
    remove_reserved_networks => 0,
    map_key_type_callback    => sub {
        my $t = $key_types->{ $_[0] };
        die "no type for key $_[0] in layout $layout\n" unless defined $t;
        return $t;
    },
);
$tree->_set_build_epoch( $spec->{build_epoch} )
    if defined $spec->{build_epoch};

sub record {
    my ($n) = @_;
    my %r;
    if ( $layout eq 'maxmind' ) {
        $r{country} = { iso_code => $n->{country} } if defined $n->{country};
        $r{registered_country} = { iso_code => $n->{registered_country} }
            if defined $n->{registered_country};
        if ( defined $n->{asn} ) {
            $r{autonomous_system_number} = $n->{asn};
            $r{autonomous_system_organization} = $n->{as_org}
                if defined $n->{as_org};
        }
        $r{city} = { names => { en => $n->{city} } } if defined $n->{city};
        if ( defined $n->{latitude} ) {
            $r{location} = {
                latitude  => $n->{latitude} + 0,
                longitude => $n->{longitude} + 0,
            };
            $r{location}{accuracy_radius} = $n->{accuracy_radius}
                if defined $n->{accuracy_radius};
        }
    }
    else {
        if ( defined $n->{country} ) {
            $r{country_code} = $n->{country};
            $r{country}      = $n->{country_name} // $n->{country};
        }
        if ( defined $n->{asn} ) {
            # A JSON number becomes "AS<n>"; a string is kept as written.
            $r{asn} = is_string( $n->{asn} ) ? $n->{asn} : "AS$n->{asn}";
            $r{as_name} = $n->{as_org} if defined $n->{as_org};
        }
    }
    return \%r;
}

# Whether a decoded JSON scalar was a JSON string (JSON::PP leaves a
# number's scalar with a numeric flag set and a string's without).
sub is_string {
    my $flags = B::svref_2object( \$_[0] )->FLAGS;
    return !( $flags & ( B::SVp_IOK() | B::SVp_NOK() ) );
}

if ( defined $generate ) {
    generate( $generate, $seed // 1 );
}
else {
    for my $n ( @{ $spec->{networks} // die "the spec has no networks\n" } )
    {
        $tree->insert_network( $n->{cidr}, record($n) );
    }
}

# Written beside and renamed, so that a failure leaves no file behind.
eval {
    open my $fh, '>:raw', "$out.tmp" or die "$out.tmp: $!\n";
    $tree->write_tree($fh);
    close $fh or die "$out.tmp: $!\n";
    rename "$out.tmp", $out or die "$out: $!\n";
    1;
} or do {
    my $e = $@;
    unlink "$out.tmp";
    die $e;
};

# N disjoint networks laid out as the real databases are: one after
# another from the space's start, each aligned on its own size, with one
# gap in ten (for misses), so that the tree has about one node a network
# (4.4 million nodes for 4 million networks; networks scattered at random
# would take ten times the nodes). Three in five are IPv4, their lengths
# from one shorter to four longer than the length whose blocks would
# fill the space; the rest are IPv6 from 2a00::, /32 to /48. The records
# come from a pool of 100 000 (a City database shares its records
# between networks; MaxMind's writer stores each distinct record once).
# Integers only: Perl's are 64 bits.
sub generate {
    my ( $n, $s ) = @_;
    srand($s);
    my $n4 = $ip_version == 4 ? $n : int( $n * 3 / 5 );
    my $n6 = $n - $n4;

    # The IPv4 length whose blocks would fill the space: 2^32 / n4.
    my $fit = 32;
    $fit-- while $fit > 8 && ( 1 << ( 32 - $fit ) ) * $n4 * 2 <= 2**32;
    my $put = fill( 32, 0, 1 << 32, $n4, $fit - 1, $fit + 4, \&cidr4 );
    my $end = ( 0x2a00 << 48 ) + ( 1 << 56 );
    $put += fill( 64, 0x2a00 << 48, $end, $n6, 32, 48, \&cidr6 ) if $n6;
    print {*STDERR} "generated $put of $n networks\n" if $put != $n;
}

# Places up to count blocks of lengths lo..hi (bits-bit addresses, or
# the top 64 bits of IPv6 ones) from start until end; returns how many.
sub fill {
    my ( $bits, $addr, $end, $count, $lo, $hi, $cidr ) = @_;
    my $put = 0;
    while ( $put < $count ) {
        my $len = $lo + int( rand( $hi - $lo + 1 ) );
        # An address with k trailing zero bits starts blocks of 2^k at most.
        my $align = $bits;
        $align-- while $align > 0 && !( ( $addr >> ( $bits - $align ) ) & 1 );
        $len = $align if $addr != 0 && $len < $align;
        my $size = 1 << ( $bits - $len );
        last if $addr + $size > $end || $addr + $size < $addr;
        if ( rand(10) >= 1 ) {
            insert_random( $cidr->( $addr, $len ) );
            $put++;
        }
        $addr += $size;
    }
    return $put;
}

sub cidr4 {
    my ( $a, $len ) = @_;
    return join( '.', ( $a >> 24 ) & 255, ( $a >> 16 ) & 255,
        ( $a >> 8 ) & 255, $a & 255 )
        . "/$len";
}

sub cidr6 {
    my ( $a, $len ) = @_;
    return sprintf( '%x:%x:%x:%x::/%d',
        ( $a >> 48 ) & 0xffff,
        ( $a >> 32 ) & 0xffff,
        ( $a >> 16 ) & 0xffff,
        $a & 0xffff, $len );
}

sub insert_random {
    my ($cidr) = @_;
    state @countries = qw(US CN DE GB FR JP BR IN RU NL CA IT ES KR AU SE PL);
    my $r = int( rand(100000) );
    $tree->insert_network(
        $cidr,
        record(
            {   country => $countries[ $r % @countries ],
                asn     => 1000 + $r,
                as_org  => "Network $r",
            }
        )
    );
}
