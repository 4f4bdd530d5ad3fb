// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {DexPair} from "./DexPair.sol";

/// @title DexFactory
/// @notice Creates one DexPair per token pair and announces it with the V2-style `PairCreated` event, which
///         the token indexer uses to discover pools.
contract DexFactory {
    /// @notice Pair of two tokens, in either order (zero address when none).
    mapping(address => mapping(address => address)) public getPair;
    /// @notice Every pair, in creation order.
    address[] public allPairs;

    /// @dev The last argument (the number of pairs after this one) is unnamed, as in Uniswap V2.
    event PairCreated(address indexed token0, address indexed token1, address pair, uint256);

    error IdenticalAddresses();
    error ZeroAddress();
    error PairExists(address pair);

    function allPairsLength() external view returns (uint256) {
        return allPairs.length;
    }

    /// @notice Deploys the pair of `tokenA` and `tokenB`; token0 is the lower address.
    function createPair(address tokenA, address tokenB) external returns (address pair) {
        if (tokenA == tokenB) revert IdenticalAddresses();
        (address token0, address token1) = tokenA < tokenB ? (tokenA, tokenB) : (tokenB, tokenA);
        if (token0 == address(0)) revert ZeroAddress();
        if (getPair[token0][token1] != address(0)) revert PairExists(getPair[token0][token1]);

        pair = address(new DexPair(token0, token1));
        getPair[token0][token1] = pair;
        getPair[token1][token0] = pair;
        allPairs.push(pair);
        emit PairCreated(token0, token1, pair, allPairs.length);
    }
}
